// ConditionVariable: queueing, notification by moving waiters into the mutex's queue, timeouts.

#include <TC/Synchronization/ConditionVariable.h>

#include <TC/Checked.h>
#include <TC/Suspend.h>

namespace TC::Synchronization
{
void ConditionVariable::Wait(std::unique_lock<Mutex>& lock)
{
    TC_CHECK(lock.owns_lock(), "ConditionVariable::Wait needs the mutex held",
             "Wait called with a unique_lock that does not own its mutex");
    Node node(*this, *lock.mutex());
    SuspendTask(&node); // resumed by the mutex's hand-off: we own the mutex again
}

CvStatus ConditionVariable::WaitFor(std::unique_lock<Mutex>& lock, Duration timeout)
{
    TC_CHECK(lock.owns_lock(), "ConditionVariable::WaitFor needs the mutex held",
             "WaitFor called with a unique_lock that does not own its mutex");
    Node node(*this, *lock.mutex());
    if (SuspendTaskFor(&node, timeout))
        return CvStatus::Notified; // resumed by the mutex's hand-off
    lock.mutex()->lock();          // timed out: the mutex is not ours yet
    return CvStatus::TimedOut;
}

void ConditionVariable::Node::OnSuspended(SuspendedTask handle) noexcept
{
    Mutex* const mutex = mutex_; // the node may be gone once it is queued and unlocked
    task = handle;
    {
        std::lock_guard guard(owner_->lock_);
        owner_->list_.PushBack(this);
        waitingHere = true;
    }
    // Queued before the mutex is released: a Notify made under the mutex from now on sees us.
    mutex->unlock();
}

bool ConditionVariable::Node::OnTimeout(SuspendedTask) noexcept
{
    ConditionVariable& owner = *owner_;
    std::lock_guard guard(owner.lock_);
    if (!waitingHere)
        return false; // notified: on its way through the mutex's queue
    owner.list_.Remove(this);
    waitingHere = false;
    return true;
}

void ConditionVariable::NotifyOne() noexcept
{
    detail::WaitNode* node = nullptr;
    {
        std::lock_guard guard(lock_);
        node = list_.PopFront();
        if (node)
            static_cast<Node*>(node)->waitingHere = false;
    }
    if (node)
        static_cast<Node*>(node)->GetMutex()->LockOrEnqueue(node);
}

void ConditionVariable::NotifyAll() noexcept
{
    detail::WaitNode* node = nullptr;
    {
        std::lock_guard guard(lock_);
        node = list_.TakeAll();
        for (detail::WaitNode* n = node; n; n = n->next)
            static_cast<Node*>(n)->waitingHere = false;
    }
    while (node)
    {
        detail::WaitNode* const next = node->next; // read before the node changes hands
        static_cast<Node*>(node)->GetMutex()->LockOrEnqueue(node);
        node = next;
    }
}
} // namespace TC::Synchronization
