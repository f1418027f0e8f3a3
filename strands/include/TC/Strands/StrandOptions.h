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
    // Entries the queue's first segment holds, made on the first submit. A backlog past it links
    // on segments twice the one before (up to 512 entries, 28 KB), never copying what is
    // queued; emptied segments are reused, up to four kept spare, the rest given back. A
    // backlog that stays within what it has seen (give or take three segments) allocates nothing.
    std::size_t initialCapacity = 16;
};
} // namespace TC
