#pragma once
// The suspend protocol: SuspendTask, SuspendTaskFor, ResumeTask; who is running; timers.
//   TC::SuspendTask(&callback);   // callback.OnSuspended(handle) publishes the handle
//   TC::ResumeTask(handle);       // elsewhere: the waiter runs again

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

namespace TC
{
// Takes the caller off the processor, calls callback->OnSuspended(handle) outside any task,
// returns once that handle was passed to ResumeTask.
/// - From a task or any OS thread but a worker outside a task (threads convert on first wait).
/// - Checked mode fails "wait inside a callback" in OnSuspended/OnTimeout, and "wait from a place
///   that cannot wait" on a worker outside a task (coroutines co_await SuspendTaskAsync) and on
///   the timer thread.
TC_API void SuspendTask(ISuspendCallback* callback);

// SuspendTask with a deadline, at which the timer thread calls OnTimeout.
/// - Returns false if OnTimeout returned true; true whenever a ResumeTask ended the wait.
/// - No limit without EnableTimers() or with Duration::Infinite().
/// - Zero or negative: published, then timed out at once unless resumed; OnTimeout runs right
///   after OnSuspended on the waiting thread (a coroutine's: on the timer thread).
/// - Stop-aware if the waiter has a stop token (TaskStop.h), timeout not Infinite(), timers or
///   not: a stop is the deadline, OnTimeout runs in request_stop (a stop before OnSuspended
///   returned: as a zero timeout). One of resume, deadline, stop wins; all let go of the
///   callback before the wait returns. False and StopRequested(): stopped.
TC_API bool SuspendTaskFor(ISuspendCallback* callback, Duration timeout);

// Makes a waiter runnable where it suspended: a task on its scheduler, a thread in its wait, a
// coroutine on its executor then current (inline if none). Each handle exactly once.
/// - Any thread, also from a callback.
/// - From a signal handler only for a converted-thread waiter without checked mode.
TC_API void ResumeTask(SuspendedTask task) noexcept;

// Deleted: resume the SuspendedTask OnSuspended received, never a TaskHandle.
void ResumeTask(TaskHandle task) = delete;

// The calling task, or the calling thread (converting it).
TC_API TaskHandle GetCurrentTask() noexcept;

// True inside a stackful task.
TC_API bool IsInsideTask() noexcept;

// True where a wait runs other work: in a task, or on a thread pumping a workerless scheduler.
TC_API bool WaitRunsOtherWork() noexcept;

// True only where a spin before a wait holds nothing up now: a thread not pumping, or a task of
// a worker scheduler with nothing else queued. Ask again before each spin round.
TC_API bool SpinBeforeWaitHoldsNothingUp() noexcept;

// Converts the calling thread into a waiter (optional: first wait converts). Idempotent.
TC_API void ConvertCurrentThread() noexcept;

// Starts the timer thread that owns every deadline; idempotent, thread-safe.
TC_API void EnableTimers();

// True once EnableTimers() has run.
TC_API bool TimersEnabled() noexcept;
} // namespace TC
