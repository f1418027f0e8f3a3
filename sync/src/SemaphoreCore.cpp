// SemaphoreCore: the slow paths (suspend, hand-off, timeout, close) and the word's lock.

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <TC/Suspend.h>

namespace TC::Synchronization::detail
{
namespace
{
constexpr auto kAcquired = static_cast<std::uint32_t>(AcquireResult::Acquired);
constexpr auto kClosed = static_cast<std::uint32_t>(AcquireResult::Closed);
} // namespace

AcquireResult SemaphoreCore::Acquire(Duration timeout)
{
    Node node(*this);
    if (Ready(node))
        return AcquireResult(node.status);
    if (!SuspendTaskFor(&node, timeout))
        return AcquireResult::TimedOut;
    return AcquireResult(node.status);
}

std::uint64_t SemaphoreCore::LockQueue(std::uint64_t addIfNoWaiters) noexcept
{
    std::uint64_t state = state_.load(std::memory_order_relaxed); // the CAS decides
    for (unsigned spins = 0;;)
    {
        if (addIfNoWaiters != 0 && !(state & kWaiters))
        {
            CheckRoomFor(state, Count(addIfNoWaiters)); // the waiters left while we waited
            // release: as in Release; the last access.
            if (state_.compare_exchange_weak(state, state + addIfNoWaiters,
                                             std::memory_order_release, std::memory_order_relaxed))
                return 0;
            continue;
        }
        if (state & kQueueLock)
        {
            SpinPause(spins);
            state = state_.load(std::memory_order_relaxed);
            continue;
        }
        // acquire: the list as the last holder left it.
        if (state_.compare_exchange_weak(state, state | kQueueLock, std::memory_order_acquire,
                                         std::memory_order_relaxed))
            return state | kQueueLock;
    }
}

void SemaphoreCore::UnlockQueue() noexcept
{
    // release: the list as we leave it, for the next holder. An RMW, not a store: the count
    // changes under the lock (TryAcquire, a Release while no waiter is queued). The flag is
    // set already if the list is not empty, and cleared here if it is.
    state_.fetch_and(~(kQueueLock | (list_.IsEmpty() ? kWaiters : 0)), std::memory_order_release);
}

void SemaphoreCore::Node::OnSuspended(SuspendedTask handle) noexcept
{
    SemaphoreCore& owner = *owner_; // the node may be gone once it is queued and unlocked
    task = handle;
    std::uint64_t state = owner.LockQueue();
    std::uint32_t result = 0;
    for (;;)
    {
        // Under the lock only the count moves, so one CAS both decides and unlocks: it takes a
        // permit that arrived, or (none, and not closed) publishes us by setting the flag. A
        // Release after it sees the flag and waits for the lock to hand us a permit.
        std::uint64_t desired = 0;
        if (state >= kPermit)
        {
            result = kAcquired;
            desired = state - kPermit;
        }
        else if (owner.closed_.load())
        {
            result = kClosed;
            desired = state;
        }
        else
        {
            result = 0;
            desired = state | kWaiters;
            owner.list_.PushBack(this);
        }
        // acq_rel: acquires a taken permit's releaser; releases our list change and the lock.
        // The last access when we are queued: from here on a Release, Close or timeout owns us.
        if (owner.state_.compare_exchange_weak(
                state, desired - kQueueLock, std::memory_order_acq_rel, std::memory_order_relaxed))
            break;
        if (result == 0)
            owner.list_.Remove(this); // the count moved: decide again
    }
    if (result != 0)
    {
        status = result;
        ResumeTask(handle); // never queued: ours to resume
    }
}

bool SemaphoreCore::Node::OnTimeout(SuspendedTask) noexcept
{
    SemaphoreCore& owner = *owner_;
    owner.LockQueue();
    const bool queued = linked; // else a Release or Close took it and resumes it
    if (queued)
        owner.list_.Remove(this);
    owner.UnlockQueue();
    return queued;
}

void SemaphoreCore::ReleaseToWaiters(std::int64_t n) noexcept
{
    // The waiters may have left (served, timed out, closed) while we waited for the lock: then
    // the permits go to the count as in Release. (n == 0 adds nothing either way.)
    if (n == 0 || LockQueue(static_cast<std::uint64_t>(n) << kCountShift) == 0)
        return;
    // The flag is set and we hold the lock, so the list is not empty and the count is zero:
    // the permits go to the oldest waiters directly.
    WaitNode* served = nullptr;
    WaitNode** tail = &served;
    std::int64_t left = n;
    while (left > 0 && !list_.IsEmpty())
    {
        WaitNode* node = list_.PopFront();
        *tail = node;
        tail = &node->next;
        --left;
    }
    *tail = nullptr;
    const std::uint64_t unlock = kQueueLock | (list_.IsEmpty() ? kWaiters : 0);
    // release: our caller's writes and the list, for the permits' takers. One RMW unlocks,
    // clears the flag if the list emptied and adds the permits left over: the last access, so
    // the waiters we resume after it (and anyone taking a leftover) may destroy the object.
    state_.fetch_add((static_cast<std::uint64_t>(left) << kCountShift) - unlock,
                     std::memory_order_release);
    ResumeChain(served, kAcquired);
}

void SemaphoreCore::Close() noexcept
{
    closed_.store(true); // seq_cst: a waiter deciding under the lock after ours sees it
    LockQueue();
    WaitNode* all = list_.TakeAll();
    UnlockQueue();
    ResumeChain(all, kClosed);
}
} // namespace TC::Synchronization::detail
