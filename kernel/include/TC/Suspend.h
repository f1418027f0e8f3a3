#pragma once
// The suspend protocol: SuspendTask, SuspendTaskFor and ResumeTask, plus the calls that say who
// is running (GetCurrentTask) and that turn timeouts on (EnableTimers).

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

namespace TC
{
// Takes the calling task off the processor, then calls callback->OnSuspended(handle) outside any
// task, and returns once someone passed that handle to ResumeTask. Callable from a task and from
// any OS thread that is not a scheduler worker outside a task (the thread is converted on its
// first wait; see ConvertCurrentThread). Not callable inside OnSuspended/OnTimeout: checked mode
// fails "wait inside a callback" there, and "wait from a place that cannot wait" on a worker
// thread outside a task (a coroutine run by a worker must co_await SuspendTaskAsync instead) and
// on the timer thread (where a coroutine with no executor that a timeout resumed runs).
TC_API void SuspendTask(ISuspendCallback* callback);

// SuspendTask with a deadline. When it passes, the timer thread calls OnTimeout while the waiter
// is still suspended: true takes the waiter back and this returns false; false means a resumer
// has the handle, and this returns true once that resumer's ResumeTask arrives. Returns true
// whenever a ResumeTask ended the wait. Without EnableTimers(), or with Duration::Infinite(),
// there is no limit and this behaves as SuspendTask. Zero or negative: published, then timed out
// at once unless resumed first; for a task or a converted thread OnTimeout then runs on the
// waiting thread right after OnSuspended, with no trip through the timer thread (about 50 ns
// against 25 us), for a coroutine on the timer thread.
TC_API bool SuspendTaskFor(ISuspendCallback* callback, Duration timeout);

// Makes a suspended waiter runnable again where it was suspended: a task on its scheduler, a
// converted thread in its wait, a coroutine on the executor that was current when it suspended
// (inline on the calling thread if there was none). Callable from any thread and from a
// callback. From a signal handler only for a converted-thread waiter in a build without checked
// mode (one atomic or and a futex wake); a task waiter's resume may allocate and lock, so a
// handler relays through a thread (tests/misuse shows the pattern). Each handle exactly once.
TC_API void ResumeTask(SuspendedTask task) noexcept;

// A TaskHandle names a running task; it cannot be resumed. This overload exists to say so.
// ResumeTask takes the SuspendedTask that OnSuspended received, never a running task's handle.
void ResumeTask(TaskHandle task) = delete;

// The calling task, or the calling converted thread (the thread is converted if it was not).
TC_API TaskHandle GetCurrentTask() noexcept;

// True inside a stackful task.
TC_API bool IsInsideTask() noexcept;

// True where a wait of the calling code runs other work while it waits: inside a task (its
// worker runs the next task), or on a thread that pumps a scheduler with no workers (its waits
// keep pumping it). A primitive that spins before it suspends skips the spin here, since the
// work that would end the wait may be the very work the spin holds up.
TC_API bool WaitRunsOtherWork() noexcept;

// True where a short spin before a wait holds nothing up, at this moment: on a plain thread, and
// in a task of a scheduler with worker threads that has nothing else queued (its worker would
// only spin idle meanwhile). False on a thread whose waits pump a scheduler, in a task of a
// host-pumped scheduler (its wait hands the host its thread back), outside a task on a worker,
// and in a task while its worker or scheduler has work queued. It changes as work arrives: a
// spin asks again before each round, and stops when the answer turns false.
TC_API bool SpinBeforeWaitHoldsNothingUp() noexcept;

// Converts the calling OS thread into a waiter explicitly. Optional: a thread is converted on its
// first wait. Idempotent.
TC_API void ConvertCurrentThread() noexcept;

// Starts the one timer thread that owns every deadline. Idempotent and thread-safe. Before it is
// called, SuspendTaskFor waits without a limit.
TC_API void EnableTimers();

// True once EnableTimers() has run.
TC_API bool TimersEnabled() noexcept;
} // namespace TC
