#pragma once
// What the scheduler's source files share: stack sizes and caches, the stack canary, the calls
// of task hooks, and the kernel switch.

#include "SchedulerCore.h"

#include <TC/Checked.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <unistd.h>

namespace TC::detail
{
// Written at the bottom of a stack without a guard page (checked builds): "TCSTACK!".
inline constexpr std::uint64_t kStackCanary = 0x5443'5354'4143'4b21ull;
// A worker keeps up to kStackCacheLimit default-size stacks of its own and trades them with the
// shared pool kStackBatch at a time, so a burst of starts and finishes takes the pool's lock once
// per batch rather than once per task.
inline constexpr std::size_t kStackCacheLimit = 64;
inline constexpr std::size_t kStackBatch = 32;
// Room the shared pool has for default-size stacks from the start: a task freed outside its
// workers (a Join that drops the last reference after the task ended) returns its stack there,
// and the first such return must not allocate the pool's entry in a steady state.
inline constexpr std::size_t kStackPoolReserve = 2 * kStackCacheLimit;

// The helpers below have internal linkage, one copy in each file that uses it: under -fPIC their
// statics and addresses are then reached directly rather than through the GOT.
namespace
{
inline std::size_t PageSize() noexcept
{
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

inline std::size_t RoundUp(std::size_t value, std::size_t to) noexcept
{
    return (value + to - 1) / to * to;
}

} // namespace

// Calls a taskEnter or taskLeave hook; one that throws ends the process (hooks run inside the
// switch). Out of line: the call's arguments live in its frame, so a caller's own frame holds
// nothing whose address escapes and its last call can be a jump (SwitchAway).
[[gnu::noinline]] void CallTaskHook(const std::function<void(TaskHandle, const char*)>& hook,
                                    Task* task) noexcept;

// A detached task failed (`how`): nobody will see what it threw, so the process ends, saying so.
[[noreturn]] void DetachedTaskFailed(Task* task, const char* how = "ended with an exception") noexcept;

namespace
{
// Checked builds: a task without a guard page must not have overwritten the canary at the
// bottom of its stack.
inline void CheckCanary(const Task* task) noexcept
{
#if TC_CHECKED
    if (task->stack.guardBytes == 0)
    {
        std::uint64_t canary;
        std::memcpy(&canary, task->stack.Bottom(), sizeof canary);
        TC_CHECK(canary == kStackCanary, "stack overflow",
                 "a task without a guard page overwrote the bottom of its stack; give it a larger "
                 "TaskOptions::stackSize");
    }
#else
    (void)task;
#endif
}

#if TC_SWITCH_RUNS_THEN
// The step every kernel switch runs on the other side, inside the switch (SwitchContextThen).
inline void AfterSwitchInStep(void* worker) noexcept
{
    AfterSwitchIn(*static_cast<Worker*>(worker));
}
#endif

// Every kernel switch: from `from` to `to`, handing over `worker` (the thread's). When this
// context runs again it first does what the context it came from asked (AfterSwitchIn): inside
// the switch with the assembly backend, so that a caller whose last call this is continues
// straight in its own caller; after the switch returns elsewhere. Returns the worker of the
// thread this context then runs on. `fromFinished`: `from` never runs again.
[[gnu::always_inline]] inline Worker& SwitchTo(ExecutionContext& from, ExecutionContext& to,
                                               Worker* worker, bool fromFinished = false) noexcept
{
#if TC_SWITCH_RUNS_THEN
    (void)fromFinished; // only the sanitizers' annotated switch uses it
    return *static_cast<Worker*>(SwitchContextThen(from, to, worker, &AfterSwitchInStep));
#else
    Worker& arrivedOn = *static_cast<Worker*>(SwitchContext(from, to, worker, fromFinished));
    AfterSwitchIn(arrivedOn);
    return arrivedOn;
#endif
}
} // namespace
} // namespace TC::detail
