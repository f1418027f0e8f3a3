// Barrier: arrival counting and phase completion.

#include <TC/Synchronization/Barrier.h>

#include <TC/Suspend.h>

#include <mutex>

namespace TC::Synchronization
{
bool Barrier::Arrive(Node& node) noexcept
{
    detail::WaitNode* waiters = nullptr;
    {
        std::lock_guard guard(lock_);
        if (++arrived_ < participants_)
        {
            node.phase = phase_;
            return false;
        }
        arrived_ = 0;
        ++phase_;
        waiters = list_.TakeAll();
    }
    detail::ResumeChain(waiters, 0);
    return true;
}

bool Barrier::ArriveAndWait()
{
    Node node(*this);
    if (Arrive(node))
        return true;
    SuspendTask(&node);
    return false;
}

void Barrier::Node::OnSuspended(SuspendedTask handle) noexcept
{
    task = handle;
    bool completed = false;
    {
        std::lock_guard guard(owner_->lock_);
        completed = owner_->phase_ != phase; // the phase completed before we were queued
        if (!completed)
            owner_->list_.PushBack(this);
    }
    if (completed)
        ResumeTask(handle);
}
} // namespace TC::Synchronization
