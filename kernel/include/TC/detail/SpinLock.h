#pragma once
// SpinLock: a one-word lock for the few instructions a list or heap update lasts (timer heap,
// waiter lists).

#include <atomic>
#include <thread>

namespace TC::detail
{
// One pause of a spin-wait loop: lets the sibling hyperthread run and saves power.
inline void CpuRelax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

// One round of a spin-wait: a pause for 64 rounds, then a yield each round. `spins` starts at 0.
inline void SpinPause(unsigned& spins) noexcept
{
    if (++spins > 64)
        std::this_thread::yield();
    else
        CpuRelax();
}

// Guards an intrusive list or heap for a handful of pointer updates, never across SuspendTask or
// ResumeTask; yields after 64 spins. Meets Lockable (std::lock_guard works).
class SpinLock
{
public:
    void lock() noexcept
    {
        // acquire: what the previous holder wrote under the lock is visible once we own it.
        while (locked_.exchange(true, std::memory_order_acquire))
        {
            unsigned spins = 0;
            // relaxed: a plain poll; the exchange above does the synchronizing.
            while (locked_.load(std::memory_order_relaxed))
                SpinPause(spins);
        }
    }

    bool try_lock() noexcept
    {
        // acquire: as in lock().
        return !locked_.load(std::memory_order_relaxed) &&
               !locked_.exchange(true, std::memory_order_acquire);
    }

    // release: publishes what was written under the lock to the next holder.
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};
} // namespace TC::detail
