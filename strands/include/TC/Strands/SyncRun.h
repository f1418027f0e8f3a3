#pragma once
// SyncRun and SyncRunWith: drive a self-driving Task to completion on the calling thread.

#include <TC/Strands/Task.h>

#include <stdexcept>
#include <utility>

namespace TC
{
// Starts `task` on the calling thread and returns its result (rethrowing what escaped it). The
// task must complete synchronously: it may await other tasks, but nothing that parks it. One
// still suspended after its start has no result to read, and destroying its frame would tear
// down storage that whatever parked it still points into, so SyncRun leaks the frame and throws
// std::logic_error instead.
template <class T>
T SyncRun(Task<T> task)
{
    if (!task.OwnsFrame())
        detail::ThrowEmptyTask("TC::SyncRun: the task owns no frame");
    task.GetHandle().resume();
    if (!task.Done())
    {
        (void)task.Release(); // deliberately leaked: something still points into it
        throw std::logic_error("TC::SyncRun: the task suspended; it is not self-driving");
    }
    return task.Result();
}

// As SyncRun, but when the task is still suspended after its start, calls retrieve() first, while
// the frame is alive, to take the park back (and possibly wake the task, which then completes
// and its result is returned). A task the retriever did not wake has its frame deliberately
// leaked and std::logic_error thrown.
template <class T, class Retrieve>
T SyncRunWith(Task<T> task, Retrieve&& retrieve)
{
    if (!task.OwnsFrame())
        detail::ThrowEmptyTask("TC::SyncRunWith: the task owns no frame");
    task.GetHandle().resume();
    if (!task.Done())
    {
        std::forward<Retrieve>(retrieve)();
        if (!task.Done())
        {
            (void)task.Release();
            throw std::logic_error("TC::SyncRunWith: the task is still suspended after retrieve");
        }
    }
    return task.Result();
}
} // namespace TC
