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
    }
    // Queued before the mutex is released: a Notify made under the mutex from now on sees us.
    mutex->unlock();
}

bool ConditionVariable::Node::OnTimeout(SuspendedTask) noexcept
{
    if (!Claim(kTimingOut))
        return false; // notified: on its way through the mutex's queue; the cv may be gone
    // Still on the list, which no Notify takes it from now: the cv lives while we are queued.
    ConditionVariable& owner = *owner_;
    std::lock_guard guard(owner.lock_);
    owner.list_.Remove(this);
    return true;
}

void ConditionVariable::NotifyOne() noexcept
{
    detail::WaitNode* node = nullptr;
    {
        std::lock_guard guard(lock_);
        // The oldest waiter whose timeout has not claimed it; a timing-out one leaves by itself.
        for (detail::WaitNode* n = list_.Front(); n; n = n->next)
            if (static_cast<Node*>(n)->Claim(Node::kNotified))
            {
                list_.Remove(n);
                node = n;
                break;
            }
    }
    if (node)
        static_cast<Node*>(node)->GetMutex()->LockOrEnqueue(node);
}

void ConditionVariable::NotifyAll() noexcept
{
    detail::WaitNode* node = nullptr;
    {
        std::lock_guard guard(lock_);
        detail::WaitNode** tail = &node;
        for (detail::WaitNode* n = list_.Front(); n;)
        {
            detail::WaitNode* const following = n->next;
            if (static_cast<Node*>(n)->Claim(Node::kNotified))
            {
                list_.Remove(n); // clears n->next; the next claimed node, if any, sets it
                *tail = n;
                tail = &n->next;
            }
            n = following;
        }
    }
    while (node)
    {
        detail::WaitNode* const next = node->next; // read before the node changes hands
        static_cast<Node*>(node)->GetMutex()->LockOrEnqueue(node);
        node = next;
    }
}
} // namespace TC::Synchronization
