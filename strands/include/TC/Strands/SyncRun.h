#pragma once
// SyncRun and SyncRunWith: drive a self-driving Task to completion on the calling thread.

#include <TC/Strands/Task.h>

#include <stdexcept>
#include <utility>

namespace TC::Strands
{
// Starts `task` on this thread and returns its result (rethrowing). It must complete
// synchronously; one still parked leaks its frame and throws std::logic_error.
template <class T>
T SyncRun(Task<T> task)
{
    if (!task.OwnsFrame())
        detail::ThrowEmptyTask("TC::Strands::SyncRun: the task owns no frame");
    task.GetHandle().resume();
    if (!task.Done())
    {
        (void)task.Release(); // deliberately leaked: something still points into it
        throw std::logic_error("TC::Strands::SyncRun: the task suspended; it is not self-driving");
    }
    return task.Result();
}

// As SyncRun, but a task still parked after its start gets retrieve() (the frame alive) to take
// the park back and maybe wake it; if not woken, its frame leaks and std::logic_error is thrown.
template <class T, class Retrieve>
T SyncRunWith(Task<T> task, Retrieve&& retrieve)
{
    if (!task.OwnsFrame())
        detail::ThrowEmptyTask("TC::Strands::SyncRunWith: the task owns no frame");
    task.GetHandle().resume();
    if (!task.Done())
    {
        std::forward<Retrieve>(retrieve)();
        if (!task.Done())
        {
            (void)task.Release();
            throw std::logic_error("TC::Strands::SyncRunWith: the task is still suspended after retrieve");
        }
    }
    return task.Result();
}
} // namespace TC::Strands
