#pragma once
// RunTask and TaskKind: the one queued task a strand's around-task hook runs exactly once.
//   options.aroundTask = [](TC::Strands::RunTask& task) { Transaction scope; task(); };

#include <TC/Strands/detail/StrandEntry.h>
#include <TC/detail/CoroutineZone.h>

#include <cstdint>

namespace TC::Strands
{
// What a strand's queue entry is.
enum class TaskKind : std::uint8_t
{
    Call,       // a callable given to Post/TryPost
    Resumption, // a coroutine given to Submit/TrySubmit
};

// Call it exactly once, on the hook's thread, inside the hook (an unrun task is dropped as a
// closed strand drops it). Its exception comes out of operator() and the pump.
class RunTask
{
public:
    explicit RunTask(detail::StrandEntry& entry) noexcept : entry_(entry) {}
    RunTask(const RunTask&) = delete;
    RunTask& operator=(const RunTask&) = delete;

    TaskKind Kind() const noexcept
    {
        return entry_.IsCall() ? TaskKind::Call : TaskKind::Resumption;
    }
    bool HasRun() const noexcept { return ran_; }

    void operator()()
    {
        if (ran_)
            return;
        ran_ = true;
        if (entry_.run)
        {
            entry_.run(entry_.words); // an inline call, or one held in its own allocation
        }
        else
        {
            entry_.Resumed(); // resumed: nothing to free any more
            const detail::CoroutineResumption zone; // its own, inside the pump's
            entry_.Handle().resume();
        }
    }

private:
    detail::StrandEntry& entry_;
    bool ran_ = false;
};
} // namespace TC::Strands
