// SuspendableBase: who counts as the creator of a Multiple object, and each thread's list of open
// BusyCount scopes.

#include <TC/Synchronization/SuspendableBase.h>

#include <TC/Scheduler.h>

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

std::uint32_t BusyFramesOnThisThread(const BusyCount& busy) noexcept
{
    std::uint32_t count = 0;
    for (const BusyFrame* frame = OpenFrames(); frame; frame = frame->outer)
        count += frame->busy == &busy ? 1 : 0;
    return count;
}
} // namespace TC::Synchronization::detail
