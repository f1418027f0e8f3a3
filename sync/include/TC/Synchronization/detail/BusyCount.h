#pragma once
// BusyCount: lets a waiter that passed wait out the callers still inside the object, so that it
// may destroy the object as soon as its wait returns.

#include <TC/Synchronization/detail/SpinLock.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace TC::Synchronization::detail
{
class BusyCount;

// One open BusyCount::Scope on this thread's stack; the thread's scopes form a list.
struct BusyFrame
{
    const BusyCount* busy = nullptr;
    BusyFrame* outer = nullptr;
};

// The calling thread's list of open scopes (SuspendableBase.cpp). Out of line on purpose: a
// waiter drains after a task switch, possibly on another thread, and no compiler may reuse a
// thread_local address computed before it.
void PushBusyFrame(BusyFrame& frame) noexcept;
void PopBusyFrame(BusyFrame& frame) noexcept;
std::uint32_t BusyFramesOnThisThread(const BusyCount& busy) noexcept;

// An opening operation (CountDown, Done) holds a Scope around its state change and its Resume,
// and so does a waiter's publication and re-check (SuspendableBase); the scope's end is its last
// access to the object. A waiter that saw the state open -- which that operation's scope
// precedes -- calls Drain, which returns once every such scope has ended, except the scopes open
// on the draining thread's own stack: a coroutine resumed inline from inside one cannot wait for
// it to end (it ends only after the coroutine returns), and such a coroutine, like the code that
// resumed it, must leave the object alive. The wait lasts as long as the rest of one Resume (a
// few resumes, never a suspension).
class BusyCount
{
public:
    class Scope
    {
    public:
        explicit Scope(BusyCount& busy) noexcept : busy_(busy)
        {
            busy_.count_.fetch_add(1); // seq_cst: ordered before the state change
            frame_.busy = &busy_;
            PushBusyFrame(frame_);
        }
        ~Scope()
        {
            PopBusyFrame(frame_);
            // release: everything the operation did to the object happens before the drained
            // waiter's destruction of it. The last access.
            busy_.count_.fetch_sub(1, std::memory_order_release);
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        BusyCount& busy_;
        BusyFrame frame_;
    };

    void Drain() const noexcept
    {
        // acquire: pairs with the scopes' release decrement.
        std::uint32_t count = count_.load(std::memory_order_acquire);
        if (count == 0)
            return;
        const std::uint32_t own = BusyFramesOnThisThread(*this);
        for (unsigned spins = 0; count > own; count = count_.load(std::memory_order_acquire))
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
