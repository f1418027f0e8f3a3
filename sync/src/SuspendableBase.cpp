// SuspendableBase: who counts as the creator of a Multiple object, and each thread's list of open
// BusyCount scopes, and the slow part of a BusyCount drain.

#include <TC/Synchronization/SuspendableBase.h>

#include <TC/Scheduler.h>
#include <TC/Synchronization/detail/SpinLock.h>

namespace TC::Synchronization::detail
{
TaskHandle CreatorHandle() noexcept
{
    if (IsInsideTask())
        return GetCurrentTask();
    // A worker thread, or a host while it pumps, outside any task runs coroutines and
    // callbacks: none of them is the thread itself waiting, so nobody is the creator there.
    if (Scheduler::Current() != nullptr)
        return {};
    return GetCurrentTask(); // a plain or converted thread (converted now if it was not)
}

namespace
{
thread_local BusyFrame* openFrames = nullptr;

// The list head's address passes through an empty asm, as CurrentThread's does in the kernel:
// clang before 16 would otherwise reuse one thread's address after a task moved to another.
BusyFrame*& OpenFrames() noexcept
{
    BusyFrame** head = &openFrames;
    asm volatile("" : "+r"(head) : : "memory");
    return *head;
}
} // namespace

void PushBusyFrame(BusyFrame& frame) noexcept
{
    BusyFrame*& head = OpenFrames();
    frame.outer = head;
    head = &frame;
}

void PopBusyFrame(BusyFrame& frame) noexcept
{
    // Scopes end in reverse order on the thread that opened them (no scope spans a suspension).
    OpenFrames() = frame.outer;
}

OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept
{
    OwnScopes own;
    for (const BusyFrame* frame = OpenFrames(); frame; frame = frame->outer)
        if (frame->busy == &busy)
            ++own.half[frame->unit == BusyCount::Unit(0) ? 0 : 1];
    return own;
}

void BusyCount::DrainFrom(const std::uint64_t look) const noexcept
{
    const OwnScopes own = BusyFramesOnThisThread(*this);
    std::uint64_t word = look;
    bool clear[2] = {false, false};
    for (unsigned spins = 0;;)
    {
        for (unsigned half = 0; half < 2; ++half)
            clear[half] = clear[half] || Count(word, half) <= own.half[half] ||
                          Flips(word, half) != Flips(look, half);
        if (clear[0] && clear[1])
            return;
        const unsigned current = CurrentHalf(word);
        const unsigned other = current ^ 1u;
        if (!clear[current] && Count(word, other) <= own.half[other])
        {
            // The flip's CAS reads the word it changes, so "the other half holds only our
            // scopes" and "it is empty" hold at the flip itself. acquire on both outcomes: the
            // word it returns is read as the loads below are.
            std::uint64_t next = word ^ kEpochBits;
            if (Count(word, other) == 0)
                next = BumpFlips(next, other);
            if (word_.compare_exchange_weak(word, next, std::memory_order_acquire))
                word = next;
            continue;
        }
        SpinPause(spins);
        // acquire: pairs with the scopes' release decrement.
        word = word_.load(std::memory_order_acquire);
    }
}
} // namespace TC::Synchronization::detail
