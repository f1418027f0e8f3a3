#pragma once
// BusyCount: lets a waiter that passed wait out the callers still inside the object, so that it
// may destroy the object as soon as its wait returns.

#include <TC/Synchronization/detail/SpinLock.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace TC::Synchronization::detail
{
// An opening operation (CountDown, Done) is bracketed by Enter/Leave around its state change
// and its Resume, and so is a waiter's publication and re-check (SuspendableBase); Leave is its
// last access to the object. A waiter that saw the state open --
// which that operation's Enter precedes -- calls Drain, which returns once every such operation
// has left. The wait lasts as long as the rest of one Resume (a few resumes, never a suspension).
class BusyCount
{
public:
    void Enter() noexcept { count_.fetch_add(1); } // seq_cst: ordered before the state change
    // release: everything the operation did to the object happens before the drained waiter's
    // destruction of it.
    void Leave() noexcept { count_.fetch_sub(1, std::memory_order_release); }

    void Drain() const noexcept
    {
        unsigned spins = 0;
        // acquire: pairs with Leave.
        while (count_.load(std::memory_order_acquire) != 0)
        {
            if (++spins > 64)
                std::this_thread::yield();
            else
                CpuRelax();
        }
    }

private:
    std::atomic<std::uint32_t> count_{0};
};
} // namespace TC::Synchronization::detail
