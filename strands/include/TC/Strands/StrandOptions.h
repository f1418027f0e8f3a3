#pragma once
// StrandOptions: how many tasks one turn of a strand's pump runs, and the around-task hook.

#include <TC/Strands/RunTask.h>

#include <cstddef>
#include <functional>

namespace TC::Strands
{
struct StrandOptions
{
    // Tasks per pump turn before it requeues on the base (no base slot held for ever); >= 1.
    std::size_t batch = 64;
    // Around every task, on its thread, under the strand's ExecutorScope; must call task() once.
    // Unset: one branch per task.
    std::function<void(RunTask& task)> aroundTask;
    // The queue's first segment, made on first submit; growth doubles segments (up to 512
    // entries) without copying, keeps up to four spare: a steady backlog allocates nothing.
    std::size_t initialCapacity = 16;
};
} // namespace TC::Strands
