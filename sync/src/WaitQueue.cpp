// WaitQueue: publication and re-check, timeout, cancellation, and the resumes.

#include <TC/Synchronization/WaitQueue.h>

#include <TC/Suspend.h>

#include <mutex>
#include <typeinfo>

namespace TC::Synchronization
{
namespace detail
{
void WaitQueueNode::OnSuspended(SuspendedTask task) noexcept
{
    WaitQueue& queue = *queue_; // the node may be gone once it is queued and unlocked
    task_ = task;
    {
        std::lock_guard<SpinLock> lock(queue.lock_);
        queue.PushBack(this);
        // seq_cst: the waiter half of the Dekker pair with the resumers' lock-free look -- the
        // count above is visible to their look, or the state they changed is visible below.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // A stop callback that ran before we were linked found nothing to take; its stop is seen
        // here (request_stop sets the flag before it runs the callbacks).
        if (stop_ && stop_->stop_requested())
            status_ = WaitStatus::Cancelled;
        else if (!mustWait_(mustWaitArg_))
            status_ = WaitStatus::Resumed;
        else
            return; // queued: from the unlock on a resume, hand-off, timeout or stop owns us
        queue.Remove(this);
    }
    ResumeTask(task); // never left linked: ours to resume
}

bool WaitQueueNode::OnTimeout(SuspendedTask) noexcept
{
    WaitQueue& queue = *queue_;
    std::lock_guard<SpinLock> lock(queue.lock_);
    if (!linked_)
        return false; // a resumer or a stop took it and resumes it
    queue.Remove(this);
    return true;
}

void WaitQueueNode::Cancel() noexcept
{
    WaitQueue& queue = *queue_;
    SuspendedTask task;
    {
        std::lock_guard<SpinLock> lock(queue.lock_);
        if (!linked_)
            return; // not queued yet (OnSuspended sees the stop), or already taken
        queue.Remove(this);
        task = task_;
        status_ = WaitStatus::Cancelled;
    }
    ResumeTask(task); // the last touch of the node: its wait may return now
}

WaitTarget WaitQueueNode::WaitedOn() const noexcept
{
    return {queue_, &typeid(WaitQueue), queue_->Name()};
}

void WaitQueueNode::WatchStop() noexcept
{
    if (stop_)
        stopWatch_.emplace(*stop_, OnStop{this}); // runs Cancel at once if already stopped
}

WaitStatus WaitQueueNode::Block(Duration timeout)
{
    WatchStop();
    const bool resumed = SuspendTaskFor(this, timeout);
    UnwatchStop(); // waits for a Cancel still running on another thread
    return resumed ? status_ : WaitStatus::TimedOut;
}
} // namespace detail

void WaitQueue::PushBack(detail::WaitQueueNode* node) noexcept
{
    node->next_ = nullptr;
    node->prev_ = tail_;
    if (tail_)
        tail_->next_ = node;
    else
        head_ = node;
    tail_ = node;
    node->linked_ = true;
    // relaxed: written under the lock; the fence after it orders it for the lock-free look.
    waiters_.store(waiters_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void WaitQueue::Remove(detail::WaitQueueNode* node) noexcept
{
    if (node->prev_)
        node->prev_->next_ = node->next_;
    else
        head_ = node->next_;
    if (node->next_)
        node->next_->prev_ = node->prev_;
    else
        tail_ = node->prev_;
    node->next_ = node->prev_ = nullptr;
    node->linked_ = false;
    waiters_.store(waiters_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

detail::WaitQueueNode* WaitQueue::TakeOldest() noexcept
{
    // seq_cst: the resumer half of the Dekker pair (see OnSuspended): our caller's state change
    // is visible to a waiter's re-check, or its count is visible here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_relaxed) == 0)
        return nullptr;
    std::lock_guard<detail::SpinLock> lock(lock_);
    detail::WaitQueueNode* node = head_;
    if (node)
        Remove(node);
    return node; // ours from the unlock on; the queue is not touched again
}

void WaitQueue::ResumeTaken(detail::WaitQueueNode* node, WaitStatus status) noexcept
{
    const SuspendedTask task = node->task_;
    node->status_ = status;
    ResumeTask(task); // the node may be gone from here on
}

bool WaitQueue::ResumeOne() noexcept
{
    detail::WaitQueueNode* node = TakeOldest();
    if (!node)
        return false;
    ResumeTaken(node, WaitStatus::Resumed);
    return true;
}

std::size_t WaitQueue::ResumeAll() noexcept
{
    // seq_cst: as in TakeOldest.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_relaxed) == 0)
        return 0;
    detail::WaitQueueNode* all = nullptr;
    {
        std::lock_guard<detail::SpinLock> lock(lock_);
        all = head_;
        for (detail::WaitQueueNode* node = all; node; node = node->next_)
            node->linked_ = false;
        head_ = tail_ = nullptr;
        waiters_.store(0, std::memory_order_relaxed);
    }
    std::size_t count = 0;
    while (all)
    {
        detail::WaitQueueNode* next = all->next_; // read before the resume frees the node
        ResumeTaken(all, WaitStatus::Resumed);
        all = next;
        ++count;
    }
    return count;
}
} // namespace TC::Synchronization
