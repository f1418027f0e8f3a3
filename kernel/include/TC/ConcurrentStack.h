#pragma once
// ConcurrentStack<T>: an intrusive lock-free LIFO, for chaining waiters across threads.

#include <atomic>
#include <cstdint>
#include <thread>

namespace TC
{
// Chains nodes through `T* next` without allocating; any thread pushes and pops.
//   TC::ConcurrentStack<TC::SuspendedTaskEntry> waiters;  waiters.Push(task.Entry());
/// - Push: one CAS, never waits. Removals take a remover flag (the head's low bit): one at a
///   time, ABA-safe, no node limit; T must be aligned to at least 2 bytes.
/// - Push releases, pops acquire: what the pusher wrote is visible to the popper.
template <class T>
class ConcurrentStack
{
public:
    ConcurrentStack() noexcept = default;
    ConcurrentStack(const ConcurrentStack&) = delete;
    ConcurrentStack& operator=(const ConcurrentStack&) = delete;

    // True if the stack was empty before. Lock-free.
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

    // Removes the newest node, or nullptr.
    T* Pop() noexcept
    {
        if (head_.load(std::memory_order_relaxed) == 0)
            return nullptr;
        std::uintptr_t head = AcquireRemover();
        for (;;)
        {
            T* top = Pointer(head);
            // The only remover: `top` stays valid; a push above it fails the exchange (retry).
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

    // True if no node was on the stack at the load (`order`: seq_cst if needed).
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
