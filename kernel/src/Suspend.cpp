// The suspend protocol: SuspendTask, SuspendTaskFor, ResumeTask and their coroutine forms.
//
// Hot-path cost (release build, untimed, task waiter): SuspendTask is one context switch plus the
// OnSuspended call; ResumeTask from the same worker is a non-atomic local queue push. The
// primitive's own claims (exchange / compare-exchange) are the only read-modify-writes.

#include "Diagnostics.h"
#include "ParkedCoroutines.h"
#include "Resume.h"
#include "SchedulerCore.h"
#include "ThreadState.h"
#include "Timers.h"

#include <TC/Checked.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace TC::detail
{
namespace
{
// The coroutine entry whose await_suspend is on this thread's stack right now, and whether a
// ResumeTask for it arrived during its OnSuspended with no executor to go to.
struct InlineResume
{
    SuspendedTaskEntry* suspending = nullptr;
    bool requested = false;
};
thread_local InlineResume inlineResume;

#if TC_CHECKED
// Numbers every suspension in the process, 1 to 65535 and round again: a task's entry lives as
// long as the task, and a converted thread's or a coroutine's new entry may sit where the last
// one did, so a handle of an earlier suspension differs from the current one's unless a multiple
// of 65535 suspensions came in between.
std::atomic<std::uint32_t> suspensions{0};

std::uint16_t NextGeneration() noexcept
{
    return static_cast<std::uint16_t>(suspensions.fetch_add(1, std::memory_order_relaxed) % 65535 + 1);
}

// ResumeTask's checks of the handle against its entry, before the entry changes.
void CheckResumable(SuspendedTask task, SuspendedTaskEntry& entry) noexcept
{
    // A handle made before the waiter's current suspension: resuming it would end a wait it does
    // not belong to (relaxed: a later resume of the right handle happens after its publication).
    if (HandleBits::Generation(task) != entry.generation_.load(std::memory_order_relaxed)) [[unlikely]]
    {
        // The primitive is named only while the waiter waits (its callback alive).
        const bool waiting = entry.state_.load(std::memory_order_acquire) == EntryState::Suspended;
        const std::string detail = "ResumeTask received a stale handle, of an earlier suspension "
                                   "of a waiter that was resumed and has suspended again since"
                                   + (waiting ? " (now on primitive " + PrimitiveTypeOf(entry) + ")"
                                              : std::string())
                                   + ", whose wait it would end; a handle reaches ResumeTask "
                                     "exactly once: claim it with an atomic exchange and let go "
                                     "of it once claimed";
        ReportRuleViolation("handle resumed twice", detail.c_str());
    }
    const EntryState previous = entry.state_.exchange(EntryState::Resumed, std::memory_order_acq_rel);
    if (previous == EntryState::Resumed) [[unlikely]]
    {
        // Named after the primitive: the callback the waiter suspended with is the primitive.
        const std::string detail = "ResumeTask received a handle that was already resumed (or taken back "
                                   "by OnTimeout) -- primitive "
                                   + PrimitiveTypeOf(entry)
                                   + "; claim each handle with an atomic exchange so exactly one "
                                     "resumer gets it";
        ReportRuleViolation("handle resumed twice", detail.c_str());
    }
    TC_CHECK(previous == EntryState::Suspended, "ResumeTask on a handle that is not suspended",
             "the handle's waiter is running; only a handle OnSuspended received may be resumed");
    UnregisterSuspended(entry);
}
#endif
} // namespace

#if TC_CHECKED
void MarkSuspendedChecked(SuspendedTaskEntry& entry) noexcept
{
    entry.generation_.store(NextGeneration(), std::memory_order_relaxed);
    entry.state_.store(EntryState::Suspended, std::memory_order_relaxed);
    RegisterSuspended(entry);
}
#endif

namespace
{
void CheckCanWait(const ThreadState& thread, bool inTask) noexcept
{
    TC_CHECK(thread.callbackDepth == 0, "wait inside a callback",
             "SuspendTask/SuspendTaskFor (or a primitive's Wait) was called from OnSuspended or "
             "OnTimeout, which run outside any task and must not suspend, yield or wait");
    TC_CHECK(inTask || !thread.isWorkerThread, "wait from a place that cannot wait",
             "SuspendTask was called on a scheduler worker thread outside a task (from a coroutine "
             "or callback the scheduler runs); co_await SuspendTaskAsync instead");
    TC_CHECK(!thread.isTimerThread, "wait from a place that cannot wait",
             "a blocking wait on the timer thread (a coroutine with no executor that a timeout "
             "resumed runs there) would stop every deadline in the process; give the coroutine "
             "an executor, or co_await instead of blocking");
    (void)thread;
    (void)inTask;
}
} // namespace

// RescheduleTask's cases beyond a local push that fits: a shared enqueue, a queue that grows.
[[gnu::noinline]] void RescheduleTaskSlow(Worker* worker, Task* task) noexcept
{
    try
    {
        if (task->pin != kAnyWorker)
            task->scheduler->ResumePinned(worker, task);
        else
            task->scheduler->EnqueueFrom(worker, reinterpret_cast<std::uintptr_t>(task),
                                         task->priority, Arrival::Resume);
    }
    catch (...)
    {
        ReportRuleViolation("out of memory", "ResumeTask could not queue a task");
    }
}

// A task resumed from its own worker is a local queue push; from elsewhere, a shared enqueue.
// The push is inline and calls nothing, so this path saves no registers.
inline void RescheduleTask(Task* task) noexcept
{
    Worker* worker = CurrentThreadInSwitchFreeCode().worker; // nothing here switches
    SetRunState(*task, TaskRunState::Ready);
    if (task->pin != kAnyWorker ||
        !task->scheduler->TryEnqueueLocal(worker, reinterpret_cast<std::uintptr_t>(task),
                                          task->priority)) [[unlikely]]
        RescheduleTaskSlow(worker, task);
}

[[gnu::noinline]] void ResumeUncommon(SuspendedTaskEntry* entry) noexcept
{
    ReachRacePoint(RacePoint::BeforeResume, *entry);
    if (TimerNode* timer = entry->timer_)
    {
        if (IsParkedCoroutine(*entry))
        {
            // Its executor may drop the frame that holds the node: submitted only once the
            // timer service cannot touch the node (Timers.h), by us or by whoever holds it.
            if (!ReleaseTimerForResume(*timer))
                return;
        }
        else
            NoteTimerResume(*timer); // the waiter settles its node itself when it runs
    }
    Reschedule(entry);
}

void Reschedule(SuspendedTaskEntry* entry) noexcept
{
    switch (entry->kind_)
    {
    case WaiterKind::Task:
        RescheduleTask(TaskOf(entry));
        break;
    case WaiterKind::Thread:
    {
        // The fetch_or is the last access to the waiter's word that it may still depend on; the
        // futex wake after it only names the address (see Futex.h).
        auto* word = static_cast<std::atomic<std::uint32_t>*>(entry->owner_);
        if (word->fetch_or(kWordResumed, std::memory_order_acq_rel) & kWordSleeping)
            FutexWake(word);
        break;
    }
    case WaiterKind::Coroutine:
    {
#if !TC_CHECKED
        UnlistParkedCoroutine(*entry); // checked builds: ResumeTask or the timer unregistered it
#endif
        const auto handle = std::coroutine_handle<>::from_address(entry->owner_);
        if (IExecutor* executor = entry->executor_)
        {
            if (entry->timer_ && DeliverCountedCoroutine(*entry))
                break; // queued on the scheduler that waits for it (Timers.h)
            // noexcept context: an executor that refuses (throws) terminates the process.
            executor->Submit(ParkedWork{handle, std::coroutine_handle<>::from_address(entry->abandon_)});
            break;
        }
        if (inlineResume.suspending == entry)
        {
            inlineResume.requested = true; // its await_suspend will return false instead
            break;
        }
        handle.resume();
        break;
    }
    }
}
} // namespace TC::detail

namespace TC
{
using namespace detail;

void SuspendTask(ISuspendCallback* callback)
{
    ThreadState& thread = CurrentThreadInSwitchFreeCode();
    Task* task = thread.worker ? thread.worker->current : nullptr;
    CheckCanWait(thread, task != nullptr);
    if (task)
    {
        // Stored only when it changes, so that a waiter which keeps waiting on one primitive
        // leaves its entry's line clean for a resumer on another thread (Task.h). timer_ needs
        // no store: SuspendTaskFor clears it before it returns.
        if (task->entry.callback_ != callback)
            task->entry.callback_ = callback;
        // The worker's coarse clock, not a clock read: on the line the switch writes anyway.
        task->entry.suspendedAt_ = thread.worker->tick;
        SetRunState(*task, TaskRunState::Suspended);
        MarkSuspended(task->entry);
        SwitchAway(*thread.worker, task, PostSwitch::Suspend);
        return;
    }
    ThreadWait(callback, Duration::Infinite(), nullptr);
}

bool SuspendTaskFor(ISuspendCallback* callback, Duration timeout)
{
    if (timeout.IsInfinite())
    {
        SuspendTask(callback);
        return true;
    }
    ThreadState& thread = CurrentThread();
    Task* task = thread.worker ? thread.worker->current : nullptr;
    // The waiter's stop token, if a stop can come (TaskStop.h): the wait is then timed even
    // without timers, so that the stop has a node to fire.
    const std::stop_token* stop = task ? task->stopToken : thread.stopToken;
    if (stop && !stop->stop_possible())
        stop = nullptr;
    if (!stop && !TimersEnabled())
    {
        SuspendTask(callback);
        return true;
    }
    CheckCanWait(thread, task != nullptr);
    if (!task)
        return ThreadWait(callback, timeout, stop);
    TimerNode node;
    task->entry.callback_ = callback;
    task->entry.timedOut_ = false;
    PrepareTimer(task->entry, node, timeout);
    StopTrigger trigger(node, stop); // a stop already requested marks the node here
    task->entry.suspendedAt_ = thread.worker->tick;
    SetRunState(*task, TaskRunState::SuspendedTimed);
    MarkSuspended(task->entry);
    SwitchAway(*thread.worker, task, PostSwitch::SuspendTimed);
    trigger.Disarm(); // before settling: a StopTimer in progress has returned
    const bool resumed = SettleTimer(task->entry, node);
    task->entry.timer_ = nullptr;
    return resumed;
}

void ResumeTask(SuspendedTask task) noexcept
{
    SuspendedTaskEntry* entry = task.Entry();
    TC_CHECK(entry != nullptr, "ResumeTask on a null handle", "ResumeTask(nullptr)");
#if TC_CHECKED
    CheckResumable(task, *entry);
#endif
    // The common case -- an untimed task, no test kit listening -- stays inline and light; the
    // rest goes out of line, so the fast path saves no registers it does not use.
    if (racePointHook.load(std::memory_order_relaxed) || entry->timer_ ||
        entry->kind_ != WaiterKind::Task) [[unlikely]]
    {
        ResumeUncommon(entry);
        return;
    }
    RescheduleTask(TaskOf(entry));
}

TaskHandle GetCurrentTask() noexcept
{
    ThreadState& thread = CurrentThread();
    if (Task* task = thread.worker ? thread.worker->current : nullptr)
        return TaskHandle(task);
    return TaskHandle(&thread);
}

bool IsInsideTask() noexcept
{
    return CurrentTask() != nullptr;
}

bool WaitRunsOtherWork() noexcept
{
    const ThreadState& thread = CurrentThread();
    if (thread.worker)
        return true; // a task, or work a worker loop or a pump runs
    for (const auto& host : thread.hosts)
        if (host.load(std::memory_order_relaxed))
            return true;
    return false;
}

bool SpinBeforeWaitHoldsNothingUp() noexcept
{
    const ThreadState& thread = CurrentThread();
    if (const Worker* worker = thread.worker)
    {
        // Only a task's own wait, on a worker thread, with nothing queued that the wait would run.
        const SchedulerCore* core = worker->core;
        return worker->current != nullptr && core->HasWorkerThreads() &&
               worker->LocalQueuesEmpty() && !worker->HasPinnedArrivals() &&
               !core->HasQueuedWork(kLowestPriority);
    }
    return !WaitRunsOtherWork();
}

void ConvertCurrentThread() noexcept
{
    (void)CurrentThread(); // a thread is a waiter once its state exists; waits need nothing else
}

namespace detail
{
// A coroutine's suspension, listed for DumpTasks: by checked mode's registry (MarkSuspended), in
// other builds here, before OnSuspended can resume it.
inline void ListForDumps([[maybe_unused]] SuspendedTaskEntry& entry) noexcept
{
#if !TC_CHECKED
    ListParkedCoroutine(entry);
#endif
}

void PrepareCoroutineEntry(SuspendedTaskEntry& entry, std::coroutine_handle<> handle,
                           std::coroutine_handle<> abandon, std::shared_ptr<void>& keepAlive) noexcept
{
    entry.kind_ = WaiterKind::Coroutine;
    entry.owner_ = handle.address();
    entry.abandon_ = abandon.address();
    entry.executor_ = CurrentExecutor();
    if (entry.executor_)
        keepAlive = entry.executor_->KeepAlive();
    entry.timedOut_ = false;
    entry.timer_ = nullptr;
}

bool SuspendCoroutine(SuspendedTaskEntry& entry, ISuspendCallback* callback) noexcept
{
    entry.callback_ = callback;
    MarkSuspended(entry);
    ListForDumps(entry);
    const InlineResume saved = inlineResume;
    inlineResume = {&entry, false};
    CallOnSuspended(entry);
    const bool stay = !inlineResume.requested;
    inlineResume = saved;
    return stay;
}

bool SuspendCoroutineFor(SuspendedTaskEntry& entry, TimerNode& timer, ISuspendCallback* callback,
                         Duration timeout) noexcept
{
    if (timeout.IsInfinite() || !TimersEnabled())
        return SuspendCoroutine(entry, callback);
    entry.callback_ = callback;
    PrepareTimer(entry, timer, timeout);
    MarkSuspended(entry);
    ListForDumps(entry);
    const InlineResume saved = inlineResume;
    inlineResume = {&entry, false};
    CallOnSuspended(entry);
    const bool stay = !inlineResume.requested;
    inlineResume = saved;
    // Read before arming: once armed, a resume may submit the coroutine and its executor may
    // drop the frame, this entry and node with it.
    const bool parked = IsParkedCoroutine(entry);
    if (ArmTimer(timer) && parked)
        Reschedule(&entry); // a resume during OnSuspended left the submission to us: last access
    return stay;
}

bool FinishCoroutineTimedWait(SuspendedTaskEntry& entry, TimerNode& timer) noexcept
{
    if (entry.timer_ == nullptr)
        return true; // untimed (no timers, or an infinite timeout)
    const bool resumed = SettleTimer(entry, timer);
    entry.timer_ = nullptr;
    return resumed;
}
} // namespace detail
} // namespace TC
