#pragma once
// StrandOptions: a strand's turn length, around-task hook, first segment.

#include <TC/Strands/RunTask.h>

#include <cstddef>
#include <functional>

namespace TC::Strands
{
struct StrandOptions
{
    // Tasks per pump turn before it requeues on the base; >= 1.
    std::size_t batch = 64;
    // Around every task, on its thread, in the strand's ExecutorScope; must call task() once.
    std::function<void(RunTask& task)> aroundTask;
    // Entries of the queue's first segment (made on first submit).
    std::size_t initialCapacity = 16;
};
} // namespace TC::Strands
