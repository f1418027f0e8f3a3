// SemaphoreCore: the slow paths (suspend, hand-off, timeout, close).

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <TC/Suspend.h>

#include <mutex>

namespace TC::Synchronization::detail
{
namespace
{
constexpr auto kAcquired = static_cast<std::uint32_t>(AcquireResult::Acquired);
constexpr auto kClosed = static_cast<std::uint32_t>(AcquireResult::Closed);
} // namespace

AcquireResult SemaphoreCore::Acquire()
{
    Node node(*this);
    if (Ready(node))
        return AcquireResult(node.status);
    SuspendTask(&node);
    return AcquireResult(node.status);
}

AcquireResult SemaphoreCore::Acquire(Duration timeout)
{
    Node node(*this);
    if (Ready(node))
        return AcquireResult(node.status);
    if (!SuspendTaskFor(&node, timeout))
        return AcquireResult::TimedOut;
    return AcquireResult(node.status);
}

void SemaphoreCore::Node::OnSuspended(SuspendedTask handle) noexcept
{
    SemaphoreCore& owner = *owner_; // the node may be gone once it is on the list and unlocked
    task = handle;
    std::uint32_t result = 0;
    {
        std::lock_guard guard(owner.lock_);
        owner.list_.PushBack(this);
        owner.waiters_.fetch_add(1); // seq_cst: publish, then re-check the count below
        result = static_cast<std::uint32_t>(owner.TryAcquireOrClosed());
        if (result != 0)
        {
            owner.list_.Remove(this);
            owner.waiters_.fetch_sub(1);
            status = result;
        }
    }
    if (result != 0)
        ResumeTask(handle);
}

bool SemaphoreCore::Node::OnTimeout(SuspendedTask) noexcept
{
    SemaphoreCore& owner = *owner_;
    std::lock_guard guard(owner.lock_);
    if (!linked)
        return false; // a Release or Close took it and resumes it
    owner.list_.Remove(this);
    owner.waiters_.fetch_sub(1);
    return true;
}

void SemaphoreCore::Wake() noexcept
{
    WaitNode* served = nullptr;
    WaitNode** tail = &served;
    {
        std::lock_guard guard(lock_);
        while (!list_.IsEmpty() && TryAcquire())
        {
            WaitNode* node = list_.PopFront();
            waiters_.fetch_sub(1);
            *tail = node;
            tail = &node->next;
        }
    }
    ResumeChain(served, kAcquired);
}

void SemaphoreCore::Close() noexcept
{
    closed_.store(true);
    WaitNode* all = nullptr;
    {
        std::lock_guard guard(lock_);
        all = list_.TakeAll();
        waiters_.store(0);
    }
    ResumeChain(all, kClosed);
}
} // namespace TC::Synchronization::detail
