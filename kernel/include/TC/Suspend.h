#pragma once
// The suspend protocol: SuspendTask, SuspendTaskFor and ResumeTask, plus the calls that say who
// is running (GetCurrentTask) and that turn timeouts on (EnableTimers).
//   TC::SuspendTask(&callback);   // callback.OnSuspended(handle) publishes the handle
//   TC::ResumeTask(handle);       // elsewhere: the waiter runs again

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

namespace TC
{
// Takes the calling task off the processor, calls callback->OnSuspended(handle) outside any
// task, and returns once someone passed that handle to ResumeTask.
/// - From a task or any OS thread but a worker outside a task (threads convert on first wait).
/// - Checked mode fails "wait inside a callback" in OnSuspended/OnTimeout, and "wait from a place
///   that cannot wait" on a worker outside a task (coroutines co_await SuspendTaskAsync) and on
///   the timer thread.
TC_API void SuspendTask(ISuspendCallback* callback);

// SuspendTask with a deadline: the timer thread calls OnTimeout while the waiter is suspended.
/// - OnTimeout true takes the waiter back: returns false. False: a resumer has the handle, and
///   this returns true on its ResumeTask. True whenever a ResumeTask ended the wait.
/// - No limit without EnableTimers() or with Duration::Infinite().
/// - Zero or negative: published, then timed out at once unless resumed; for a task or thread
///   OnTimeout runs on the waiting thread right after OnSuspended, for a coroutine on the timer.
TC_API bool SuspendTaskFor(ISuspendCallback* callback, Duration timeout);

// Makes a suspended waiter runnable where it was suspended: a task on its scheduler, a thread in
// its wait, a coroutine on its executor then current (inline if none). Each handle exactly once.
/// - Any thread, and from a callback.
/// - From a signal handler only for a converted-thread waiter without checked mode; a task's
///   resume may allocate and lock (relay through a thread).
TC_API void ResumeTask(SuspendedTask task) noexcept;

// Deleted: ResumeTask takes the SuspendedTask OnSuspended received, never a running TaskHandle.
void ResumeTask(TaskHandle task) = delete;

// The calling task, or the calling converted thread (the thread is converted if it was not).
TC_API TaskHandle GetCurrentTask() noexcept;

// True inside a stackful task.
TC_API bool IsInsideTask() noexcept;

// True where a wait runs other work meanwhile: in a task, or on a thread pumping a workerless
// scheduler. Spinning primitives skip their spin there.
TC_API bool WaitRunsOtherWork() noexcept;

// True where a short spin before a wait holds nothing up now: a plain thread, or a task of a
// worker scheduler with nothing else queued. False on a pumping thread, in a host-pumped task,
// on a worker outside a task, and while work is queued. Ask again before each spin round.
TC_API bool SpinBeforeWaitHoldsNothingUp() noexcept;

// Converts the calling OS thread into a waiter; optional (first wait converts). Idempotent.
TC_API void ConvertCurrentThread() noexcept;

// Starts the one timer thread that owns every deadline; idempotent, thread-safe. Before it,
// SuspendTaskFor waits without a limit.
TC_API void EnableTimers();

// True once EnableTimers() has run.
TC_API bool TimersEnabled() noexcept;
} // namespace TC
