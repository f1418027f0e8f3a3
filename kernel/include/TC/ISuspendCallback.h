#pragma once
// ISuspendCallback: what a primitive gives SuspendTask so it can publish the suspended waiter.

#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

namespace TC
{
// Implemented by a primitive. Both members run outside any task and must not suspend, yield or
// wait (checked mode fails "wait inside a callback" if they do).
class TC_API ISuspendCallback
{
public:
    // Runs once the waiter is off the processor: on the scheduler thread for a task, on the
    // waiting thread for a converted thread, inside await_suspend for a coroutine. Publish the
    // handle, then re-check the condition; if it already holds, claim the handle back with an
    // atomic exchange and pass it to ResumeTask. The waiter may be resumed, and may even have
    // returned from its wait, before OnSuspended returns: touch nothing of the waiter's after
    // the handle has been published except through a claim that succeeded.
    virtual void OnSuspended(SuspendedTask task) noexcept = 0;

    // Runs on the timer thread when a SuspendTaskFor deadline passes, while the waiter is still
    // suspended -- or, for a zero or negative timeout of a task or a converted thread, right
    // after OnSuspended on the waiting thread (a task's worker, inside the switch). Return true if
    // this call took the handle back from where OnSuspended put it (the wait then returns false),
    // false if a resumer already has it (the kernel then waits for that resumer's ResumeTask and
    // the wait returns true). Never resume the task here. The default, false, is right only for
    // primitives that never time out.
    virtual bool OnTimeout(SuspendedTask /*task*/) noexcept { return false; }

protected:
    ISuspendCallback() = default;
    ISuspendCallback(const ISuspendCallback&) = default;
    ISuspendCallback& operator=(const ISuspendCallback&) = default;
    ~ISuspendCallback() = default;
};
} // namespace TC
