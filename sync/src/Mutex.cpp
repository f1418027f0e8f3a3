// Mutex: the contended paths -- queueing, FIFO hand-off and timeouts.

#include <TC/Synchronization/Mutex.h>

#include <TC/Suspend.h>

#include <mutex>

namespace TC::Synchronization
{
bool Mutex::TryLockFor(Duration timeout)
{
    if (TryAcquire())
        return true;
    Node node(*this);
    return SuspendTaskFor(&node, timeout); // true: resumed owning the mutex
}

void Mutex::LockOrEnqueue(detail::WaitNode* node) noexcept
{
    const SuspendedTask task = node->task;
    {
        std::lock_guard guard(lock_);
        std::uint32_t state = state_.load(std::memory_order_relaxed); // the CASes decide
        for (;;)
        {
            if (state == kFree)
            {
                // acquire: we own it now and see the previous owner's writes.
                if (state_.compare_exchange_weak(state, kLocked, std::memory_order_acquire,
                                                 std::memory_order_relaxed))
                    break;
                continue;
            }
            // relaxed: kContended only tells unlock to take the spinlock, which orders the rest.
            if (state == kLocked &&
                !state_.compare_exchange_weak(state, kContended, std::memory_order_relaxed,
                                              std::memory_order_relaxed))
                continue;
            list_.PushBack(node);
            return; // the node is the queue's now; the guard unlocks
        }
    }
    ResumeTask(task); // it was free: the waiter owns it
}

void Mutex::Node::OnSuspended(SuspendedTask handle) noexcept
{
    task = handle;
    owner_->LockOrEnqueue(this);
}

bool Mutex::Node::OnTimeout(SuspendedTask) noexcept
{
    Mutex& owner = *owner_;
    std::lock_guard guard(owner.lock_);
    if (!linked)
        return false; // an unlock handed the mutex to us and resumes us
    owner.list_.Remove(this);
    if (owner.list_.IsEmpty())
        owner.state_.store(kLocked, std::memory_order_relaxed); // still owned, no waiters
    return true;
}

void Mutex::UnlockSlow() noexcept
{
    // The unlocking owner holds it, so the word reads locked or contended until we let go; free
    // means nobody held it (unchecked: stored free again below, as a harmless no-op).
    TC_CHECK(state_.load(std::memory_order_relaxed) != kFree, "unlock only a locked mutex",
             "Mutex::unlock on a free mutex");
    detail::WaitNode* next = nullptr;
    {
        std::lock_guard guard(lock_);
        next = list_.PopFront();
        if (next == nullptr)
        {
            // The last waiter timed out after we saw kContended.
            state_.store(kFree, std::memory_order_release); // release: as in unlock()
            return;
        }
        // Ownership passes to `next` without the mutex ever being free, so nobody barges in.
        // relaxed: the spinlock and ResumeTask order the hand-off.
        if (list_.IsEmpty())
            state_.store(kLocked, std::memory_order_relaxed);
    }
    ResumeTask(next->task);
}
} // namespace TC::Synchronization
