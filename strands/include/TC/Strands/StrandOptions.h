#pragma once
// StrandOptions: how many tasks one turn of a strand's pump runs, and the around-task hook.

#include <TC/Strands/RunTask.h>

#include <cstddef>
#include <functional>

namespace TC
{
struct StrandOptions
{
    // Tasks one turn of the pump runs before it queues itself on the base again, so a strand
    // with a steady inflow never holds one of the base's slots for ever. At least 1.
    std::size_t batch = 64;
    // Called around every task, on the thread that runs it, under the strand's ExecutorScope; it
    // must call task() once. Unset, it costs one branch per task.
    std::function<void(RunTask& task)> aroundTask;
    // Queue room made on the first submit; the queue doubles when full (the only steady-state
    // allocation, and only while the backlog grows past what it has seen).
    std::size_t initialCapacity = 16;
};
} // namespace TC
