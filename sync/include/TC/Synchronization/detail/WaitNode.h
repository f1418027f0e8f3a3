#pragma once
// WaitNode and WaitList: the per-wait record and FIFO that the lock-based primitives queue.

#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <cstdint>

namespace TC::Synchronization::detail
{
// One waiter of a lock-based primitive, in the waiter's own frame (no allocation) and the
// ISuspendCallback of that one wait; the waker leaves a result in `status`.
/// - Once on a list and the lock released, only whoever takes it off may touch it, until its
///   ResumeTask.
class TC_API WaitNode : public ISuspendCallback
{
public:
    WaitNode() noexcept = default;
    WaitNode(const WaitNode&) = delete;
    WaitNode& operator=(const WaitNode&) = delete;
    // Virtual for -Wnon-virtual-dtor; never deleted through a base.
    virtual ~WaitNode() = default;

    WaitNode* next = nullptr;
    WaitNode* prev = nullptr;
    SuspendedTask task;
    std::uint32_t status = 0; // primitive-defined result, written by the waker before ResumeTask
    bool linked = false;      // on a list (guarded by that list's lock)
};

// An intrusive doubly linked FIFO of WaitNodes; the owner guards it with its lock.
class WaitList
{
public:
    bool IsEmpty() const noexcept { return head_ == nullptr; }
    WaitNode* Front() const noexcept { return head_; }

    void PushBack(WaitNode* node) noexcept
    {
        node->next = nullptr;
        node->prev = tail_;
        if (tail_)
            tail_->next = node;
        else
            head_ = node;
        tail_ = node;
        node->linked = true;
    }

    WaitNode* PopFront() noexcept
    {
        WaitNode* node = head_;
        if (node)
            Remove(node);
        return node;
    }

    // O(1); the node must be on this list.
    void Remove(WaitNode* node) noexcept
    {
        if (node->prev)
            node->prev->next = node->next;
        else
            head_ = node->next;
        if (node->next)
            node->next->prev = node->prev;
        else
            tail_ = node->prev;
        node->next = node->prev = nullptr;
        node->linked = false;
    }

    // Detaches everything, oldest first through `next`; the nodes are marked unlinked.
    WaitNode* TakeAll() noexcept
    {
        WaitNode* all = head_;
        for (WaitNode* node = all; node; node = node->next)
            node->linked = false;
        head_ = tail_ = nullptr;
        return all;
    }

private:
    WaitNode* head_ = nullptr;
    WaitNode* tail_ = nullptr;
};

// Resumes a chain taken off a list, after its lock was released, leaving `status` first; reads
// each link before the resume.
inline void ResumeChain(WaitNode* node, std::uint32_t status) noexcept
{
    while (node)
    {
        WaitNode* next = node->next;
        const SuspendedTask task = node->task;
        node->status = status;
        ResumeTask(task);
        node = next;
    }
}
} // namespace TC::Synchronization::detail
