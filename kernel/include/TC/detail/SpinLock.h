#pragma once
// SpinLock: a one-word lock for a few-instruction list or heap update.

#include <atomic>
#include <thread>

namespace TC::detail
{
// One pause of a spin-wait loop.
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

// Held for a few pointer updates, never across SuspendTask or ResumeTask. Lockable.
class SpinLock
{
public:
    void lock() noexcept
    {
        // acquire: sees the previous holder's writes.
        while (locked_.exchange(true, std::memory_order_acquire))
        {
            unsigned spins = 0;
            // relaxed: a poll; the exchange synchronizes.
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

    // release: publishes to the next holder.
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};
} // namespace TC::detail
