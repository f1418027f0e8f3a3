// Task lifecycle: a task's allocation, start, first frame, run, end and free.

#include "SchedulerInternals.h"

#include "Diagnostics.h"
#include "Resume.h"
#include "Sanitizers.h"

#include <TC/Suspend.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace TC::detail
{
namespace
{
// A pooled stack keeps the redzones of the frames its last task never unwound (ASan builds).
void ClearOldRedzones([[maybe_unused]] const StackMemory& stack) noexcept
{
#if TC_ASAN
    ASAN_UNPOISON_MEMORY_REGION(stack.Bottom(), stack.size);
#endif
}

// The end of a task as its JoinHandle sees it, whether the callable ran or not, once nothing
// uses the task's block any more (its callable destroyed, its stack and context given up): the
// join word says finished and a waiting joiner is resumed. The join word also decides who frees
// the block: from this exchange on the handle does -- unless it let go before (detached), and
// then this does, first ending the process, saying how (`detachedFailure`), if the task failed.
// acq_rel: the task's writes (its error) reach the handle; a Detach's reach us.
void EndForJoiner(Task* task, const char* detachedFailure) noexcept
{
    const std::uintptr_t previous = task->join.exchange(kJoinFinished, std::memory_order_acq_rel);
    if (previous == kJoinDetached)
    {
        if (task->error)
            DetachedTaskFailed(task, detachedFailure);
        task->scheduler->FreeTask(task);
    }
    else if (previous != kJoinRunning)
        ResumeTask(SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(previous))); // it frees
}

[[noreturn]] void TaskMain(void* argument, void* message)
{
    OnContextStarted();
    auto* task = static_cast<Task*>(argument);
    auto* worker = static_cast<Worker*>(message); // the worker this context first runs on
#if !TC_SWITCH_RUNS_THEN
    AfterSwitchIn(*worker); // the assembly switch ran it already
#endif
    for (;;)
    {
        // Every task starts with its worker's floating-point control state, also one that
        // starts in place on the stack of a task that changed its own and ended.
        LoadFloatingPointControl(worker->taskStartControl);
        try
        {
            task->body->invoke(task->callable);
        }
        catch (...)
        {
            task->error = std::current_exception();
        }
        task->body->destroy(task->callable);
        // The next task of this worker that has never run starts right here, on this stack:
        // no stack to take or give back, no context to make, no switch. (The task may have
        // moved to another worker since it started.)
        worker = CurrentThread().worker;
        Task* next = worker->core->StartOnFinishedStack(*worker, task);
        if (!next)
            break;
        task = next;
    }
    SwitchAway(*worker, task, PostSwitch::Finish);
    __builtin_unreachable();
}
} // namespace

void DetachedTaskFailed(Task* task, const char* how) noexcept
{
    const std::string what = DescribeException(task->error);
    std::fprintf(stderr, "TC: detached task '%s' %s: %s\n", task->name, how, what.c_str());
    std::fflush(stderr);
    std::terminate();
}

void SchedulerCore::CheckStartAllowed(const char* call) const
{
    if (stopping.load(std::memory_order_acquire))
        throw std::logic_error("TC::Scheduler('" + options.name + "'): " + call +
                               " refused: the scheduler is stopping or stopped (Stop or "
                               "~Scheduler)");
}

std::size_t SchedulerCore::TaskStackSize(const TaskOptions& taskOptions) const noexcept
{
    return taskOptions.stackSize
               ? RoundUp(std::max(taskOptions.stackSize, 4 * PageSize()), PageSize())
               : defaultStackSize;
}

Task* SchedulerCore::AllocateTask(const TaskOptions& taskOptions, const TaskBody& body, void*& slot)
{
    CheckStartAllowed("Start");
    Worker* worker = SubmittingWorker(); // nullptr: use this core's shared pool
    const std::size_t stackSize = TaskStackSize(taskOptions);
    if (IBlockAllocator* blockAllocator = BlockAllocatorFor(taskOptions)) [[unlikely]]
        return SetUpTask(TakeBlockFrom(*blockAllocator), worker, true, stackSize, taskOptions, body, slot);
    return SetUpTask(TakeBlock(worker), worker, false, stackSize, taskOptions, body, slot);
}

Task* SchedulerCore::SetUpTask(void* block, Worker* worker, bool fromAllocator, std::size_t size,
                               const TaskOptions& taskOptions, const TaskBody& body, void*& slot)
{
    const bool fromWorker = worker != nullptr;
    auto* task = ::new (block) Task;
    task->id = NextUniqueId();
    task->blockFromWorker = fromWorker;
    task->blockFromAllocator = fromAllocator;
    task->stack.size = size;
    if (body.size <= kTaskBlockSize - kTaskBytes && body.alignment <= kTaskBlockAlign)
    {
        // The usual case: the callable rides in the block, and the stack waits for the first run.
        task->callable = static_cast<unsigned char*>(block) + kTaskBytes;
    }
    else
    {
        // A large callable lives at the top of a stack taken now.
        StackMemory stack;
        try
        {
            stack = TakeStack(size, worker);
        }
        catch (...)
        {
            task->~Task();
            ReleaseBlock(block, fromWorker, fromAllocator);
            throw;
        }
        ClearOldRedzones(stack); // before the callable is constructed there
        auto callable = (reinterpret_cast<std::uintptr_t>(stack.Top()) - body.size) & ~(body.alignment - 1);
        if (callable < reinterpret_cast<std::uintptr_t>(stack.Bottom()) + 2 * PageSize())
        {
            task->~Task();
            ReleaseBlock(block, fromWorker, fromAllocator);
            ReturnStack(stack, worker);
            throw std::length_error("TC::Scheduler::Start: the callable does not fit on the task's stack");
        }
        task->stack = stack;
        task->callable = reinterpret_cast<void*>(callable);
    }
    task->scheduler = this;
    task->home = this;
    task->body = &body;
    task->name = taskOptions.name ? taskOptions.name : "task";
    task->priority = taskOptions.priority;
    task->pin = HasWorkerThreads() ? taskOptions.worker : kAnyWorker;
    if (taskOptions.stopToken.stop_possible())
    {
        task->startToken = taskOptions.stopToken;
        task->stopToken = &task->startToken;
    }
    task->entry.kind_ = WaiterKind::Task;
    task->entry.owner_ = task;
    slot = task->callable; // counted by Launch, once the callable is in place
    return task;
}

bool SchedulerCore::BindStack(Task* task, Worker* worker) noexcept
{
    const bool callableOnStack = task->stack.base != nullptr;
    if (!callableOnStack)
    {
        try
        {
            task->stack = TakeStack(task->stack.size, worker);
        }
        catch (...)
        {
            task->error = std::current_exception();
            EndUnrun(task, worker);
            return false;
        }
        ClearOldRedzones(task->stack); // a stack taken at Start was cleared then
    }
    const StackMemory& stack = task->stack;
    unsigned char* usable = stack.Bottom();
    // The first frame goes below the callable when the callable lives on the stack.
    unsigned char* top = callableOnStack
                             ? reinterpret_cast<unsigned char*>(
                                   reinterpret_cast<std::uintptr_t>(task->callable) & ~std::uintptr_t{15})
                             : stack.Top();
#if TC_CHECKED
    // Checked builds only: writing it touches the stack's lowest page.
    if (stack.guardBytes == 0)
        std::memcpy(usable, &kStackCanary, sizeof kStackCanary);
#endif
    MakeContext(task->context, usable, static_cast<std::size_t>(top - usable), top, &TaskMain, task);
    task->contextReady = true;
    return true;
}

void SchedulerCore::EndUnrun(Task* task, Worker* worker) noexcept
{
    // As the end of TaskMain and FinishTask, for a task that never ran (task->error is set).
    task->body->destroy(task->callable);
    CountEnd(worker);
    SetRunState(*task, TaskRunState::Finished);
    EndForJoiner(task, "could not run: no stack could be allocated for it");
}

void SchedulerCore::FreeUnstartedTask(Task* task) noexcept
{
    if (task->stack.base)
        ReturnStack(task->stack, SubmittingWorker());
    const bool toWorker = task->blockFromWorker;
    const bool toAllocator = task->blockFromAllocator;
    SetRunStateBeforeFree(*task);
    task->~Task();
    ReleaseBlock(task, toWorker, toAllocator);
}

void SchedulerCore::Launch(Task* task)
{
    Worker* worker = SubmittingWorker();
    if (!worker)
    {
        // From outside: counted from before the start is counted until the task is queued, so
        // the destructor's last look either waits for it or refuses it (AllocateTask checked
        // `stopping`, but the destructor may have started since). The task's block holds the
        // core, so freeing it after leaving the count is safe.
        try
        {
            EnterFromOutside(Arrival::New, "Start");
        }
        catch (...)
        {
            task->body->destroy(task->callable);
            FreeUnstartedTask(task);
            throw;
        }
    }
    LeaveFromOutsideAtExit leave{worker ? nullptr : this};
    CountStart(worker); // before the enqueue publishes the task, so before its end is counted
    try
    {
        if (task->pin != kAnyWorker) [[unlikely]]
            EnqueuePinned(worker, task);
        else if (worker)
            EnqueueFrom(worker, reinterpret_cast<std::uintptr_t>(task), task->priority,
                        Arrival::New);
        else
            EnqueueShared(reinterpret_cast<std::uintptr_t>(task), task->priority);
    }
    catch (...)
    {
        // Nothing was queued: the start fails as a whole and the caller gets the exception.
        CountEnd(worker);
        task->body->destroy(task->callable);
        FreeUnstartedTask(task);
        throw;
    }
}

Task* SchedulerCore::StartOnFinishedStack(Worker& worker, Task* finished) noexcept
{
    // Only where a finished task would switch straight to the next one anyway, or within a host
    // pump's turn (TryDequeueFreshTask checks its count, deadline and priorities, as its loop
    // would), and only a stack this core would have handed the next task itself: one it took
    // (a moved task's goes home), the callable not on it.
    if ((!worker.directSwitch && !worker.pumpTurn) || finished->scheduler != this ||
        finished->stack.origin != this ||
        finished->callable != reinterpret_cast<unsigned char*>(finished) + kTaskBytes)
        return nullptr;
    Task* next = TryDequeueFreshTask(worker, finished->stack.size);
    if (!next)
        return nullptr;
    CheckCanary(finished);
    if (taskHooks)
        CallTaskHook(options.hooks.taskLeave, finished);
    // The running context changes hands with its stack: the next switch away saves into it, and
    // the sanitizers' description of the stack (and ThreadSanitizer's fiber) stays true.
    // `finished` keeps stale copies: nothing reads them before its block is freed.
    next->stack = finished->stack;
    next->context = finished->context;
    next->contextReady = true;
    worker.current = next;
    CountEnd(&worker);
    SetRunState(*finished, TaskRunState::Finished);
    EndForJoiner(finished, "ended with an exception"); // the last use of `finished`
    if (taskHooks)
        CallTaskHook(options.hooks.taskEnter, next);
    return next;
}

void SchedulerCore::FinishTask(Task* task, Worker* worker) noexcept
{
    // The task switched away for good: its stack is free now, and then its block.
    DestroyContext(task->context);
    ReturnStack(std::exchange(task->stack, StackMemory{}), worker);
    CountEnd(worker);
    SetRunState(*task, TaskRunState::Finished);
    EndForJoiner(task, "ended with an exception"); // the last use of `task`
}
std::size_t SchedulerCore::Live() const noexcept
{
    // Every end before any start: each end read here happened after its task's start was
    // counted (the start is counted before the task is queued), so the starts read next include
    // it -- the difference never goes below zero, and is zero only if no task lived at some
    // moment during the call.
    std::uint64_t ended = endedElsewhere.load(std::memory_order_acquire);
    for (const auto& worker : workers_)
        ended += worker->ended.load(std::memory_order_acquire);
    std::uint64_t started = startedElsewhere.load(std::memory_order_acquire);
    for (const auto& worker : workers_)
        started += worker->started.load(std::memory_order_acquire);
    return static_cast<std::size_t>(started - ended);
}

void SchedulerCore::FreeTask(Task* task) noexcept
{
    // Home, not here: a job that moved to the host and ended there must not leave its block in
    // the host's pool while its own scheduler allocates a new one for every start.
    SchedulerCore* blockHome = task->home;
    const bool toWorker = task->blockFromWorker;
    const bool toAllocator = task->blockFromAllocator;
    SetRunStateBeforeFree(*task);
    task->~Task();
    blockHome->ReleaseBlock(task, toWorker, toAllocator); // may delete that core (Scheduler gone)
}
} // namespace TC::detail
