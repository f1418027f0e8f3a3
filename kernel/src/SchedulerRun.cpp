// Running: the worker loops, host pumping and the threads that host a scheduler, the calling
// thread's state, and the calls of user hooks from inside the scheduler.

#include "SchedulerInternals.h"
#include "StackOverflow.h"

#include "Diagnostics.h"
#include "Resume.h"
#include "Timers.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace TC::detail
{
namespace
{
// Hooks run inside the scheduler's switch and worker loop, where no exception can go: one that
// throws ends the process with a message naming the hook, the scheduler and what it threw.
[[noreturn, gnu::noinline, gnu::cold]] void HookThrew(const char* hook,
                                                      const std::string& scheduler) noexcept
{
    const std::string what = DescribeException(std::current_exception());
    const std::string detail = std::string("SchedulerHooks::") + hook + " of TC::Scheduler('" +
                               scheduler + "') threw: " + what +
                               "; hooks run inside the scheduler's switch and must not throw";
    ReportRuleViolation("scheduler hook threw", detail.c_str());
}
void CallThreadHook(const std::function<void(unsigned)>& hook, const char* which,
                    const std::string& scheduler, unsigned workerIndex) noexcept
{
    if (!hook)
        return;
    try
    {
        hook(workerIndex);
    }
    catch (...)
    {
        HookThrew(which, scheduler);
    }
}
} // namespace

void CallTaskHook(const std::function<void(TaskHandle, const char*)>& hook,
                                    Task* task) noexcept
{
    if (!hook)
        return;
    try
    {
        hook(TaskHandle(task), task->name);
    }
    catch (...)
    {
        const SchedulerOptions& options = task->scheduler->options;
        HookThrew(&hook == &options.hooks.taskEnter ? "taskEnter" : "taskLeave", options.name);
    }
}

constinit thread_local ThreadState threadState;
constinit thread_local CoroutineZone* openCoroutineZone = nullptr;

namespace
{
void CallCoroutineHook(const std::function<void(std::uint64_t, const char*)>& hook,
                       const SchedulerOptions& options, const CoroutineZone& zone) noexcept
{
    if (!hook)
        return;
    try
    {
        hook(zone.identity.id, zone.identity.name);
    }
    catch (...)
    {
        HookThrew(&hook == &options.hooks.coroutineEnter ? "coroutineEnter" : "coroutineLeave",
                  options.name);
    }
}

// Ids are handed out in batches: one shared read-modify-write per kIdBatch ids, none per task.
constexpr std::uint64_t kIdBatch = 1024;
std::atomic<std::uint64_t> nextIdBatch{1}; // 0 is "no id"
} // namespace

std::uint64_t NextUniqueId() noexcept
{
    constinit thread_local std::uint64_t next = 0;
    constinit thread_local std::uint64_t end = 0;
    if (next == end) [[unlikely]]
    {
        next = nextIdBatch.fetch_add(kIdBatch, std::memory_order_relaxed); // only uniqueness
        end = next + kIdBatch;
    }
    return next++;
}

void EnterCoroutineZone(CoroutineZone& zone, CoroutineIdentity* identity) noexcept
{
    zone.entered = true;
    if (identity)
    {
        if (identity->id == 0)
            identity->id = NextUniqueId();
        zone.identity = *identity;
    }
    else
    {
        zone.identity.id = NextUniqueId();
    }
    if (!zone.identity.name)
        zone.identity.name = "coroutine";
    const auto* core = static_cast<const SchedulerCore*>(zone.scheduler);
    CallCoroutineHook(core->options.hooks.coroutineEnter, core->options, zone);
}

void CloseCoroutineZone(CoroutineZone& zone) noexcept
{
    openCoroutineZone = zone.outer;
    if (!zone.entered)
        return;
    const auto* core = static_cast<const SchedulerCore*>(zone.scheduler);
    CallCoroutineHook(core->options.hooks.coroutineLeave, core->options, zone);
}

void SchedulerCore::ResumeInZone(std::coroutine_handle<> handle)
{
    struct Open
    {
        CoroutineZone zone;
        explicit Open(const SchedulerCore* core) noexcept : zone{core, openCoroutineZone, {}, false}
        {
            openCoroutineZone = &zone;
        }
        ~Open() { CloseCoroutineZone(zone); }
    } open(this);
    handle.resume();
}

namespace
{
// Guards every core's hostThreads_ and every thread's `host` changes by another thread: taken
// only when a thread first pumps a scheduler, when a Scheduler is destroyed and when a thread
// that pumped one exits.
std::mutex& HostLock()
{
    static std::mutex lock;
    return lock;
}

void DropHostLocked(ThreadState& thread, std::atomic<SchedulerCore*>& slot) noexcept
{
    if (SchedulerCore* old = slot.load(std::memory_order_relaxed))
        std::erase(old->HostThreads(), &thread);
    slot.store(nullptr, std::memory_order_release);
}

// A thread that pumped a scheduler leaves its list when it exits (its state is freed then).
struct HostThreadExit
{
    bool armed = false;
    ~HostThreadExit()
    {
        if (!armed)
            return;
        std::lock_guard lock(HostLock());
        for (auto& slot : threadState.hosts)
            DropHostLocked(threadState, slot);
    }
};
thread_local HostThreadExit hostThreadExit;
} // namespace

void SchedulerCore::BindHost(ThreadState& thread) noexcept
{
    hostThreadExit.armed = true;
    std::lock_guard lock(HostLock());
    if (hostsClosed_)
        return; // ~Scheduler unbound its threads: a wait still pumping it must not bind it again
    std::atomic<SchedulerCore*>* free = nullptr;
    for (auto& slot : thread.hosts)
        if (!slot.load(std::memory_order_relaxed))
        {
            free = &slot;
            break;
        }
    if (!free)
    {
        free = &thread.hosts[0]; // a fifth host replaces the first
        DropHostLocked(thread, *free);
    }
    try
    {
        hostThreads_.push_back(&thread);
    }
    catch (...)
    {
        return; // out of memory: this thread's waits do not pump the scheduler (nothing else)
    }
    free->store(this, std::memory_order_release);
}

void SchedulerCore::UnbindHostThreads() noexcept
{
    std::lock_guard lock(HostLock());
    hostsClosed_ = true;
    for (ThreadState* thread : hostThreads_)
        for (auto& slot : thread->hosts)
            if (slot.load(std::memory_order_relaxed) == this)
                slot.store(nullptr, std::memory_order_release);
    hostThreads_.clear();
}

std::size_t SchedulerCore::HoldHostsForWait(ThreadState& thread, SchedulerCore** out) noexcept
{
    bool any = false;
    for (auto& slot : thread.hosts)
        any |= slot.load(std::memory_order_relaxed) != nullptr;
    if (!any)
        return 0; // only this thread binds its slots; another thread only clears them
    std::lock_guard lock(HostLock());
    std::size_t count = 0;
    for (auto& slot : thread.hosts)
        if (SchedulerCore* core = slot.load(std::memory_order_relaxed))
        {
            // relaxed: the lock orders it before UnbindHostThreads, and so before Orphan's drop.
            core->blocks.fetch_add(1, std::memory_order_relaxed);
            out[count++] = core;
        }
    return count;
}

void SchedulerCore::ReleaseForWait() noexcept
{
    if (DropBlocks(1))
        delete this; // its Scheduler was destroyed during the wait, and no handle holds it
}

bool SchedulerCore::PumpForWait(ThreadState& thread)
{
    if (!thread.IsHostOf(this))
        return false; // its Scheduler is gone (or a fifth host replaced it): pump it no more
    // Its host, or the thread that created it and waits before any pump (it becomes the host),
    // or a drain of its destructor on this thread, which holds the pump (a nested wait).
    if (!ClaimHost() && hostPumper_.load(std::memory_order_relaxed) != &thread)
        return false;
    const HostPumpTurn turn(*this, thread);
    if (turn.Busy())
        return false; // ~Scheduler drains it on another thread
    return Pump(64, thread.waitLowest, 0, false).ran != 0;
}

ThreadState& CurrentThread() noexcept
{
    ThreadState& state = threadState;
    // The address passes through an empty asm, so no compiler can see what this returns: clang
    // before 16 treats a thread_local's address as constant within a function, and would
    // otherwise substitute it for the call's result in callers in this file, computing one
    // thread's address before a switch and reusing it after the task moved to another thread.
    // The memory clobber keeps the call from being treated as pure.
    ThreadState* address = &state;
    asm volatile("" : "+r"(address) : : "memory");
    return *address;
}

Task* CurrentTask() noexcept
{
    Worker* worker = CurrentThread().worker;
    return worker ? worker->current : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Worker loops and host pumps

void SchedulerCore::RunItem(Worker& worker, std::uintptr_t item)
{
    if (item & kCoroutineTag)
    {
        const auto handle = std::coroutine_handle<>::from_address(reinterpret_cast<void*>(item & ~kCoroutineTag));
        if (coroutineHooks) [[unlikely]]
            ResumeInZone(handle);
        else
            handle.resume();
        return;
    }
    auto* task = reinterpret_cast<Task*>(item);
    if (!PrepareToRun(task, &worker))
        return; // no stack to be had: it ended, and Join reports why
    worker.current = task;
    worker.taskScope = ExecutorScope::Innermost();
    if (taskHooks)
        CallTaskHook(options.hooks.taskEnter, task);
    // Back on the worker loop's own stack, on this thread, once whichever task switched here
    // has had its action done.
    SwitchTo(worker.context, task->context, &worker).current = nullptr;
}

void SchedulerCore::RunPostSwitch(Worker& worker, ThreadState& thread) noexcept
{
    const PostSwitch action = worker.post;
    if (action == PostSwitch::None)
        return;
    Task* task = worker.postTask;
    worker.post = PostSwitch::None;
    worker.postTask = nullptr;
    switch (action)
    {
    case PostSwitch::Suspend:
        CallOnSuspended(task->entry, thread);
        break;
    case PostSwitch::SuspendTimed:
        CallOnSuspended(task->entry, thread);
        ArmTimer(*task->entry.timer_);
        break;
    case PostSwitch::Finish:
        task->scheduler->FinishTask(task, &worker);
        break;
    case PostSwitch::Requeue:
        try
        {
            if (worker.postTarget == worker.core)
            {
                // A yield: to the back of this worker's own queue, and the next pick looks at
                // the shared queue first, so work submitted from elsewhere is not starved by
                // tasks that keep yielding (the shared queue is FIFO only per producer).
                const auto item = reinterpret_cast<std::uintptr_t>(task);
                worker.local[PriorityIndex(task->priority)].Push(item);
                worker.preferShared = true;
                if (!worker.current)
                    worker.yielded = item; // the loop picks next: not this task, if it can help it
            }
            else
            {
                // A move: MoveCurrentTaskTo was admitted by the destination and holds its count
                // until the task is queued there.
                LeaveFromOutsideAtExit leave{worker.postTarget};
                worker.postTarget->EnqueueShared(reinterpret_cast<std::uintptr_t>(task), task->priority);
            }
        }
        catch (...)
        {
            ReportRuleViolation("out of memory", "a yielding or moving task could not be queued");
        }
        break;
    case PostSwitch::None:
        break;
    }
}

void SchedulerCore::WorkerMain(Worker& worker)
{
    ThreadState& thread = CurrentThread();
    thread.worker = &worker;
    worker.threadState = &thread;
    thread.isWorkerThread = true;
    PrepareThreadForTasks(); // the stack overflow report's handler and alternate signal stack
    InitThreadContext(worker.context);
    CallThreadHook(options.hooks.threadStart, "threadStart", options.name, worker.index);
    worker.taskStartControl = ReadFloatingPointControl(); // as the hook may have set it
    RefreshTick(worker);
    {
        ExecutorScope scope(owner); // one scope for the worker's life, not one per resumption
        for (;;)
        {
            if (std::uintptr_t item = TryDequeue(worker, kLowestPriority))
            {
                RunItem(worker, item);
                continue;
            }
            if (exit_.load(std::memory_order_acquire))
            {
                // A coroutine this worker parked with a deadline after Stop's last look is
                // waited for here: its resumption still runs (Stop waits for the join).
                if (timedCoroutines.load(std::memory_order_acquire) != 0)
                {
                    AwaitDelivery(worker);
                    continue;
                }
                // The last delivery was queued before its count dropped: one more look.
                if (std::uintptr_t item = TryDequeue(worker, kLowestPriority))
                {
                    RunItem(worker, item);
                    continue;
                }
                break;
            }
            Idle(worker);
        }
    }
    // The worker runs nothing more: a submission from the hook comes from outside, and is
    // refused (the destructor has closed) instead of queued where nobody would take it.
    thread.worker = nullptr;
    CallThreadHook(options.hooks.threadStop, "threadStop", options.name, worker.index);
}

namespace
{
// Hands out ThreadState::pumpSerial.
std::atomic<std::uint64_t> pumpingThreads{0};
} // namespace

PumpResult SchedulerCore::Pump(std::size_t maxTasks, Priority lowest, std::int64_t deadline,
                               bool queuedAtStart)
{
    ThreadState& thread = CurrentThread();
    Worker& worker = HostWorker();
    struct Binding
    {
        ThreadState& thread;
        Worker* saved;
        Worker& worker;
        ThreadState* savedThread;
        ~Binding()
        {
            thread.worker = saved;
            worker.threadState = savedThread;
        }
    } binding{thread, thread.worker, worker, worker.threadState};
    thread.worker = &worker;
    worker.threadState = &thread;
    if (!thread.IsHostOf(this))
        BindHost(thread);
    // The worker's context is the pumping thread's own stack (and, under ThreadSanitizer, its
    // fiber): described again whenever another thread pumps it (the destructor's drain, a host
    // inside a wait), or a task ending would switch to the other thread's stack description.
    if (thread.pumpSerial == 0)
    {
        thread.pumpSerial = pumpingThreads.fetch_add(1, std::memory_order_relaxed) + 1;
        PrepareThreadForTasks(); // once per thread, as for a worker (WorkerMain)
    }
    if (worker.contextThread != thread.pumpSerial)
    {
        InitThreadContext(worker.context);
        worker.contextThread = thread.pumpSerial;
    }
    ExecutorScope scope(owner); // once per pump call

    std::size_t limit = maxTasks;
    if (queuedAtStart)
        limit = std::min(limit, QueuedApprox(&worker, lowest));
    // Tasks that end in this turn may start the next fresh ones on their stacks, within the
    // turn's budget (not when shuffling: each pick is the seeded pump loop's).
    PumpTurn turn{.limit = limit, .deadline = deadline, .lowest = lowest};
    struct TurnScope
    {
        Worker& worker;
        PumpTurn* outer;
        ~TurnScope() { worker.pumpTurn = outer; }
    } turnScope{worker, std::exchange(worker.pumpTurn, options.shuffleSeed == 0 ? &turn : nullptr)};
    while (turn.MayRunAnother())
    {
        const std::uintptr_t item = TryDequeue(worker, lowest);
        if (!item)
            break;
        if (turn.ran++ == 0) // the host thread's state now, read only in a turn that runs work
        {
            worker.taskStartControl = ReadFloatingPointControl();
            // A host pumps when it likes (once a frame, or after a long pause): its tasks'
            // suspensions are stamped with the time of the turn that runs them.
            RefreshTick(worker);
        }
        RunItem(worker, item);
    }
    PumpResult result;
    result.ran = turn.ran;
    result.pending = QueuedApprox(&worker, lowest);
    NoteHostQueues(lowest, result.pending);
    if (deadline != 0)
    {
        const std::int64_t left = deadline - SteadyNowNanoseconds();
        result.left = Duration::FromNanoseconds(left);
    }
    return result;
}

} // namespace TC::detail

std::uint64_t TC::TaskHandle::Id() const noexcept
{
    return id_ ? id_->id : 0;
}
