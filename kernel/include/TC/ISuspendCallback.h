#pragma once
// ISuspendCallback: what a primitive gives SuspendTask so it can publish the suspended waiter.

#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <typeinfo>

namespace TC
{
// What a waiter waits on, as diagnostics name it: the primitive's address, its type and,
// optionally, a name the primitive gives itself (nullptr: its type's name is used).
struct WaitTarget
{
    const void* object = nullptr;
    const std::type_info* type = nullptr;
    const char* name = nullptr;
};

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

    // What a waiter suspended with this callback waits on, for hang reports, DumpTasks and
    // checked-mode messages. The default names this object by its dynamic (most-derived) type,
    // right for a primitive that is its own callback; a callback that stands for another object
    // (a per-wait node, a creator's slot) returns that object. Called by the kernel only while
    // the waiter is suspended, outside the primitive's locks; it must not wait.
    virtual WaitTarget WaitedOn() const noexcept { return {this, &typeid(*this), nullptr}; }

protected:
    ISuspendCallback() = default;
    ISuspendCallback(const ISuspendCallback&) = default;
    ISuspendCallback& operator=(const ISuspendCallback&) = default;
    ~ISuspendCallback() = default;
};
} // namespace TC
