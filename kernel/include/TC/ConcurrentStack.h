#pragma once
// ConcurrentStack<T>: an intrusive lock-free LIFO of T, for chaining waiters across threads.

#include <atomic>
#include <cstdint>
#include <thread>

namespace TC
{
// Chains nodes through their `T* next` member without allocating (T is typically
// SuspendedTaskEntry, whose leading `next` the primitive owns between OnSuspended and
// ResumeTask). Any thread may push and pop.
//
// Design: Push is one compare-exchange and never waits. Removals (Pop, PopAll) hold a one-bit
// remover flag kept in the low bit of the head word, so at most one thread removes at a time.
// That is what makes the stack ABA-safe without a tag or depth counter: the only thread that can
// take the top node away is the one reading `top->next`, so a node is never read after another
// thread removed it and its owner (a task that returned, a thread that exited) freed it. It also
// means there is no limit on the number of nodes (the seed's 65535 came from a 16-bit depth
// field). A remover that finds the flag taken spins for the few instructions another removal
// lasts, then yields. T must be aligned to at least 2 bytes.
//
// Orderings: Push publishes the node with release (what the pusher wrote before Push is visible
// to the thread that pops it, which acquires); the remover flag is taken with acquire and dropped
// with release so removals are ordered with each other.
template <class T>
class ConcurrentStack
{
public:
    ConcurrentStack() noexcept = default;
    ConcurrentStack(const ConcurrentStack&) = delete;
    ConcurrentStack& operator=(const ConcurrentStack&) = delete;

    // Returns true if the stack was empty before this push. Lock-free, one CAS when uncontended.
    bool Push(T* node) noexcept
    {
        std::uintptr_t head = head_.load(std::memory_order_relaxed);
        for (;;)
        {
            node->next = Pointer(head);
            const std::uintptr_t desired = reinterpret_cast<std::uintptr_t>(node) | (head & kRemoving);
            if (head_.compare_exchange_weak(head, desired, std::memory_order_release,
                                            std::memory_order_relaxed))
                return Pointer(head) == nullptr;
        }
    }

    // Removes the newest node, or returns nullptr when empty.
    T* Pop() noexcept
    {
        if (head_.load(std::memory_order_relaxed) == 0)
            return nullptr;
        std::uintptr_t head = AcquireRemover();
        for (;;)
        {
            T* top = Pointer(head);
            // Only this thread removes, so `top` stays valid while we read its link; pushers
            // can only put new nodes above it, which makes the exchange below fail and retry.
            const std::uintptr_t desired = top ? reinterpret_cast<std::uintptr_t>(top->next) : 0;
            if (head_.compare_exchange_weak(head, desired, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return top;
        }
    }

    // Detaches every node; the result is linked newest first through `next`.
    T* PopAll() noexcept
    {
        if (head_.load(std::memory_order_relaxed) == 0)
            return nullptr;
        std::uintptr_t head = AcquireRemover();
        while (!head_.compare_exchange_weak(head, 0, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
        {
        }
        return Pointer(head);
    }

    // A snapshot: true if no node was on the stack at the moment of the load. `order` lets a
    // caller that needs the load in the seq_cst total order ask for it.
    bool IsEmpty(std::memory_order order = std::memory_order_acquire) const noexcept
    {
        return Pointer(head_.load(order)) == nullptr;
    }

private:
    static constexpr std::uintptr_t kRemoving = 1;

    static T* Pointer(std::uintptr_t word) noexcept
    {
        return reinterpret_cast<T*>(word & ~kRemoving);
    }

    // Sets the remover flag; returns the head word with the flag set.
    std::uintptr_t AcquireRemover() noexcept
    {
        unsigned spins = 0;
        std::uintptr_t head = head_.load(std::memory_order_relaxed);
        for (;;)
        {
            if ((head & kRemoving) == 0
                && head_.compare_exchange_weak(head, head | kRemoving, std::memory_order_acquire,
                                               std::memory_order_relaxed))
                return head | kRemoving;
            if (++spins > 64)
                std::this_thread::yield();
            head = head_.load(std::memory_order_relaxed);
        }
    }

    std::atomic<std::uintptr_t> head_{0};
};
} // namespace TC
