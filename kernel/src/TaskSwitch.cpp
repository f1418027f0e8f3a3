// The switch away from a running task: straight to the worker's next ready task, or back to
// its loop.

#include "SchedulerInternals.h"

#include <TC/Checked.h>

namespace TC::detail
{
namespace
{
// SwitchAway's general case: `next` (nullptr: none) is the pick, which may need a stack bound
// first (or end unrun, and then the one after it is taken); task hooks are called.
[[gnu::noinline]] void SwitchAwayGeneral(Worker& worker, Task* self, PostSwitch action,
                                         Task* next) noexcept
{
    SchedulerCore* core = worker.core;
    while (next && !core->PrepareToRun(next, &worker))
        next = core->TryDequeueLocalTask(worker); // it ended unrun (no stack): the next one
    ExecutionContext* destination = &worker.context;
    if (next)
    {
        worker.current = next;
        if (core->taskHooks)
            CallTaskHook(core->options.hooks.taskEnter, next);
        destination = &next->context;
    }
    else
        worker.current = nullptr;
    SwitchTo(self->context, *destination, &worker, action == PostSwitch::Finish);
}

// SwitchAway with task hooks: taskLeave before the pick, as the hook may queue work.
[[gnu::noinline]] void SwitchAwayWithHooks(Worker& worker, Task* self, PostSwitch action) noexcept
{
    CallTaskHook(worker.core->options.hooks.taskLeave, self);
    SwitchAwayGeneral(worker, self, action,
                      worker.directSwitch ? worker.core->TryDequeueLocalTask(worker) : nullptr);
}
} // namespace

void SwitchAway(Worker& currentWorker, Task* self, PostSwitch action, SchedulerCore* target) noexcept
{
    Worker* worker = &currentWorker;
    TC_CHECK(action == PostSwitch::Finish || ExecutorScope::Innermost() == worker->taskScope,
             "ExecutorScope held across a suspension",
             "a task suspended while an ExecutorScope it opened was still alive");
    CheckCanary(self);
    worker->post = action;
    worker->postTask = self;
    if (action == PostSwitch::Requeue)
        worker->postTarget = target; // read for Requeue only
    // The common case calls nothing before the switch, so it saves no registers.
    SchedulerCore* core = worker->core;
    if (core->taskHooks) [[unlikely]]
    {
        SwitchAwayWithHooks(*worker, self, action);
        return;
    }
    Task* next = worker->directSwitch ? core->TryDequeueLocalTask(*worker) : nullptr;
    if (next && !next->contextReady) [[unlikely]]
    {
        SwitchAwayGeneral(*worker, self, action, next);
        return;
    }
    // Straight to the next ready task (one switch, and its first act is our post action), or
    // back to the worker loop. The last call, so with the assembly backend a jump: when this
    // task runs again (perhaps on another thread), it continues straight in SwitchAway's caller.
    worker->current = next;
    SwitchTo(self->context, next ? next->context : worker->context, worker,
             action == PostSwitch::Finish);
}
} // namespace TC::detail
