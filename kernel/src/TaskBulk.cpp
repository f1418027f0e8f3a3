// Bulk starts (Scheduler::StartBulk): a batch of tasks whose blocks are taken together, and which
// are counted, admitted and queued once for the whole batch.

#include "SchedulerInternals.h"

#include <exception>
#include <utility>

namespace TC::detail
{
void SchedulerCore::StartBulk(std::size_t count, const TaskOptions& taskOptions, const TaskBody& body,
                              BulkConstruct construct, const void* source, bool detached,
                              Task** tasks)
{
    if (count == 0)
        return;
    CheckStartAllowed("StartBulk");
    Worker* worker = SubmittingWorker(); // nullptr: from outside this core's threads
    const std::size_t stackSize = TaskStackSize(taskOptions);
    IBlockAllocator* const blockAllocator = BlockAllocatorFor(taskOptions);
    const bool fromAllocator = blockAllocator != nullptr;
    FreeTaskBlock* batch = TakeBlocks(count, worker, blockAllocator);
    std::size_t made = 0; // tasks[0, made) hold a task with its callable in place
    auto freeMade = [&]() noexcept
    {
        for (std::size_t i = 0; i < made; ++i)
        {
            body.destroy(tasks[i]->callable);
            FreeUnstartedTask(tasks[i]);
        }
    };
    try
    {
        for (; made < count; ++made)
        {
            void* slot = nullptr;
            Task* task = SetUpTask(std::exchange(batch, batch->next), worker, fromAllocator,
                                   stackSize, taskOptions, body, slot); // gives its block back if it throws
            try
            {
                construct(slot, source, made);
            }
            catch (...)
            {
                FreeUnstartedTask(task);
                throw;
            }
            if (detached)
                task->join.store(kJoinDetached, std::memory_order_relaxed); // published by the enqueue
            tasks[made] = task;
        }
    }
    catch (...)
    {
        freeMade();
        while (batch)
            ReleaseBlock(std::exchange(batch, batch->next), worker != nullptr, fromAllocator);
        throw;
    }
    if (!worker)
    {
        // As Launch: counted from before the starts are counted until they are queued, so the
        // destructor's last look either waits for the batch or refuses it.
        try
        {
            EnterFromOutside(Arrival::New, "StartBulk");
        }
        catch (...)
        {
            freeMade();
            throw;
        }
    }
    LeaveFromOutsideAtExit leave{worker ? nullptr : this};
    // Counted before the enqueue publishes them, so before any of their ends is counted.
    auto countOn = [&](std::atomic<std::uint64_t> Worker::*own, std::atomic<std::uint64_t>& elsewhere)
    {
        if (worker)
            (worker->*own).store((worker->*own).load(std::memory_order_relaxed) + count,
                                 std::memory_order_release); // written by this thread alone
        else
            elsewhere.fetch_add(count, std::memory_order_release);
    };
    countOn(&Worker::started, startedElsewhere);
    try
    {
        EnqueueBulk(worker, tasks, count, taskOptions.priority);
    }
    catch (...)
    {
        countOn(&Worker::ended, endedElsewhere); // nothing was queued: the batch fails as a whole
        freeMade();
        throw;
    }
}
} // namespace TC::detail
