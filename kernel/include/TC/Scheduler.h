#pragma once
// Scheduler: runs stackful tasks and coroutine resumptions, on its own worker threads or pumped
// by a host thread (a game's main loop), and states itself as the current executor while it does.

#include <TC/Duration.h>
#include <TC/Executor.h>
#include <TC/StackAllocator.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/BulkStart.h>
#include <TC/detail/Export.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace TC
{
class Scheduler;

namespace detail
{
struct Task;
class SchedulerCore;

// How a task's callable is run and destroyed. The callable lives in the task's block when it fits
// (up to 128 bytes, 64-byte aligned at most), else at the top of a stack taken at Start.
struct TaskBody
{
    std::size_t size;
    std::size_t alignment;
    void (*invoke)(void* callable);
    void (*destroy)(void* callable) noexcept;
};

template <class F>
struct TaskBodyFor
{
    static void Invoke(void* callable) { (*static_cast<F*>(callable))(); }
    static void Destroy(void* callable) noexcept { static_cast<F*>(callable)->~F(); }
    static constexpr TaskBody body{sizeof(F), alignof(F), &Invoke, &Destroy};
};
} // namespace detail

// Which queue a task or resumption waits in. Strict: a worker or a pump takes the High work ready
// for it before any Normal work, at every pick but the one right after a YieldTask (see there).
// A host that is short of time can run High only (the pump calls' `lowest`).
enum class Priority : std::uint8_t
{
    High = 0,   // this frame's work: runs before any ready Normal work
    Normal = 1, // background work: runs when no High work is ready
};

// What an idle worker (or a host in WaitForWork) does before work arrives.
enum class IdlePolicy : std::uint8_t
{
    SpinThenSleep, // spin about 20 us, then sleep until woken (default; an idle scheduler burns no CPU)
    Spin,          // never sleeps: lowest latency, one core busy per idle worker
    Yield,         // sched_yield in a loop: never sleeps, gives the core to other threads
    Sleep,         // sleeps at once
};

// Observers the host installs, e.g. to name threads, set FTZ/DAZ or feed a profiler's fiber API.
// Hooks run on the thread concerned and must not suspend. They must not throw either: they run
// inside the scheduler's switch and worker loop, so one that throws ends the process with a
// message naming the hook and the exception ("scheduler hook threw"), in every build.
struct SchedulerHooks
{
    // On each worker thread as it starts and just before it ends, with its index (0-based).
    // Every task starts with the floating-point control state (rounding, exception masks,
    // flush-to-zero; on x86-64 MXCSR and the x87 control word) its worker thread has once
    // threadStart returned -- a host-pumped task, the host thread's as the pump call began
    // running work -- never with what the task before it left; each task then keeps its own
    // across suspensions, yields and moves, as the ABI keeps it across a call. MXCSR's exception
    // flags are status, not control (the ABI lets any call change them): they stay with the
    // thread, so a task may find flags raised by another after it suspends, and loses its own
    // when it moves to another thread; test them with fetestexcept between two waits.
    // threadStop runs after the worker left its scheduler: Scheduler::Current() is nullptr there
    // and a Submit to that scheduler from it is refused (the destructor is past its last look).
    std::function<void(unsigned workerIndex)> threadStart;
    std::function<void(unsigned workerIndex)> threadStop;
    // Each time a task starts or continues running, and each time it stops running (suspends,
    // yields, moves or finishes): always in matched pairs, on the same thread. The name is the
    // TaskOptions::name the task was started with (a stable pointer), or "task".
    std::function<void(TaskHandle task, const char* name)> taskEnter;
    std::function<void(TaskHandle task, const char* name)> taskLeave;
};

struct TC_API SchedulerOptions
{
    // 0: no threads of its own; the host pumps it with RunPending, RunFor or RunUntilIdle.
    unsigned workerCount = 0;
    // What each task may use of its stack; the guard region comes on top (StackAllocator.h).
    std::size_t stackSize = StackSize::Medium;
    StackGuard stackGuard = StackGuard::Page;
    // With StackGuard::Page: the inaccessible region below each stack, rounded up to whole pages
    // (at least one). Address space only -- no memory, and one mapping per stack whatever its
    // size. A frame up to this size that starts anywhere on the stack faults in it; a larger one
    // may jump it unless its code was built with -fstack-clash-protection.
    std::size_t stackGuardBytes = kDefaultStackGuardBytes;
    IdlePolicy idlePolicy = IdlePolicy::SpinThenSleep;
    // nullptr: DefaultStackAllocator(). Must outlive the scheduler, and every task started on it
    // that moved to another scheduler (MoveCurrentTaskTo): the scheduler it left does not wait
    // for it. A stack always goes back to the scheduler that took it, whichever scheduler its
    // task ends on, so stacks never drift from one scheduler's pool to another's: into that
    // scheduler's pool (or a worker's cache) while it lives, to this allocator once it is gone.
    IStackAllocator* stackAllocator = nullptr;
    // Most stack memory, in bytes of stackSize (guard regions, address space only, not counted),
    // that the scheduler keeps pooled for reuse besides its workers' own caches (up to 64
    // default-size stacks each): a stack released while the pool holds that much goes back to the
    // allocator at once, so a burst of tasks does not keep its stacks until the scheduler is
    // destroyed. The default holds 1024 Medium stacks; 0 pools nothing beyond the workers' caches;
    // SIZE_MAX sets no limit. TrimStackPool frees what the pool holds now.
    std::size_t stackPoolBytes = 64 * 1024 * 1024;
    std::string name = "TC";
    SchedulerHooks hooks;
    // Host-pumped schedulers only: nonzero makes each pump pick the next ready item
    // pseudo-randomly from this seed instead of first-in first-out, so a test can explore
    // interleavings and replay a failing one from its seed. 0 (default): FIFO.
    std::uint64_t shuffleSeed = 0;
};

struct TaskOptions
{
    const char* name = nullptr; // stable string (a literal); reported to hooks and hang reports
    Priority priority = Priority::Normal;
    std::size_t stackSize = 0; // 0: the scheduler's
};

// What a pump call did and what it left.
struct PumpResult
{
    std::size_t ran = 0;     // tasks and resumptions run
    std::size_t pending = 0; // still queued when it returned (approximate when other threads submit)
    Duration left;           // RunFor: budget not spent (zero if overrun); others: zero
};

// Owns the right to join one task. Join waits (from a task, a converted thread or the host)
// and rethrows what escaped the task. Destroying a joinable handle detaches the task; a detached
// task whose callable throws terminates the process with a message naming the task.
// Lifetime: the handle and the task share the task's block; whichever of the task's end and the
// handle's release (Join, Detach, destruction) comes second frees it. A handle may outlive its
// Scheduler (whose destructor waits for every task to end): joining or dropping it afterwards
// is fine, and the last such release frees what is left of the scheduler.
class [[nodiscard("keep the JoinHandle to join the task, or call Detach()")]] TC_API JoinHandle
{
public:
    JoinHandle() noexcept = default;
    JoinHandle(JoinHandle&& other) noexcept : task_(std::exchange(other.task_, nullptr)) {}
    JoinHandle& operator=(JoinHandle&& other) noexcept
    {
        if (this != &other)
        {
            Detach();
            task_ = std::exchange(other.task_, nullptr);
        }
        return *this;
    }
    ~JoinHandle() { Detach(); }

    // Waits until the task has finished, then rethrows what escaped it, if anything (or why it
    // could not run: the stack allocator's exception). Afterwards the handle is empty.
    // Precondition: Joinable() (std::logic_error otherwise).
    void Join();
    // Lets the task run on unobserved. No-op on an empty handle.
    void Detach() noexcept;
    bool Joinable() const noexcept { return task_ != nullptr; }
    // True once the task has ended: its callable returned or threw and its stack was given up
    // (Join would not wait).
    bool IsFinished() const noexcept;

private:
    friend class Scheduler;
    explicit JoinHandle(detail::Task* task) noexcept : task_(task) {}
    detail::Task* task_ = nullptr;
};

// Runs stackful tasks and coroutine resumptions.
///
/// Threads:
/// - With workers it is a thread pool: a task runs on any worker unless moved elsewhere, so
///   thread-local storage seen by a task may change across any wait.
/// - Without workers its host thread pumps it, and only that thread. The host is the first
///   thread that pumps it, or the thread that created it if that thread waits (a converted-thread
///   wait) before any thread pumped it: a game's main thread that starts tasks on its scheduler
///   and waits on a latch before its first RunFor runs them in that wait.
/// - A host thread's waits keep running the work of every scheduler it hosts (up to four; a
///   fifth it pumps or creates replaces the first), to any depth, so work pinned to the host
///   cannot deadlock it. Stop and ~Scheduler called there do the same.
/// - Work run inside such a wait must not throw out of the pump (a coroutine whose
///   unhandled_exception rethrows): the wait cannot end by an exception once its handle is
///   published, so that fails "work threw inside a wait", naming the exception, in every build.
///   RunPending and friends rethrow it.
///
/// Submission (Start, Submit) works from any thread, never blocks on the scheduler's work and
/// never runs work inline. On a scheduler with one worker or none, each thread's submissions of
/// one priority start in the order it made them; the host's between pumps go to its own queue,
/// without atomics, once a pump has left nothing queued.
///
/// Stopping (Stop, or ~Scheduler, which stops it first if Stop was not called):
/// - It requests shutdown, then waits until every task it started has finished and every
///   coroutine parked on it in a timed wait (SuspendTaskForAsync, WaitAsync(timeout), after
///   co_await scheduler.Schedule()) has been resumed, by a resumer or its deadline, and has run
///   on it; queued coroutine resumptions run too. Then it joins the workers; ~Scheduler then
///   frees the stacks.
/// - While it waits, the calling thread pumps the scheduler if it has no workers, and every
///   scheduler the thread hosts (not when called inside a task), so shutdown finishes in any
///   order: a worker scheduler whose tasks wait on host work may be destroyed before the host's.
/// - A task that is never resumed makes it wait for ever: after 5 s it prints to stderr, once, a
///   hang report of its tasks: each one's name, state (running on worker N, ready, suspended,
///   suspended until a deadline) and what it waits on, as TC::DumpTasks (<TC/Diagnostics.h>)
///   writes them.
/// - Start once Stop began throws std::logic_error.
/// - Submit and MoveCurrentTaskTo are accepted, and what they hand over runs, until Stop's last
///   look: the moment it has seen its last task finish, its last timed coroutine resumed, and the
///   shared queue either empty or past the backlog it held when Stop began (as many items taken
///   from it since; work a worker queued for itself may still be there, and runs before the
///   worker stops). A thread that keeps submitting faster than the work runs delays the last
///   look by that backlog only.
/// - After the last look, called from anywhere but the scheduler's own workers or pump, they
///   throw std::logic_error ("TC::Scheduler('<name>'): Submit refused: the scheduler is stopping
///   or stopped (Stop or ~Scheduler)") and hand nothing over. A call that races the last look is
///   either refused or waited for and run, never lost. Never refused: ResumeTask of its own
///   tasks, and the resumption of a coroutine parked on it in a timed wait.
/// - A coroutine parked on it without a deadline is not waited for. Resumed after the last look
///   it terminates the process (its resumer cannot throw); resumed after ~Scheduler returned, the
///   behaviour is undefined. Resume it before stopping, or give its wait a deadline.
/// - A stopped scheduler keeps refusing until it is destroyed, so the refusal can end a
///   submitting thread: Stop(), join that thread, then destroy the scheduler.
/// - Calls made while the destructor runs are answered only until it starts to free the
///   scheduler (once Stop has returned inside it): a call after that is undefined.
/// - Once ~Scheduler has returned, nothing of it runs on any thread: no worker, no hook, no
///   deadline of a coroutine parked on it.
/// - A taskLeave or taskEnter hook that a MoveCurrentTaskTo runs must not wait for the thread
///   stopping the target.
///
/// A scheduler without workers is best stopped and destroyed on its host thread. On another:
/// - its host thread must not pump it, resume its tasks, submit to it or release its JoinHandles
///   while the destructor runs (between pumps the host queues on the host worker without
///   atomics, and the destructor pumps that worker);
/// - the host may be inside a wait then: the wait and the destructor take turns pumping its
///   work, either may run any of it, and once the destructor has returned the wait pumps it no
///   more (it holds the scheduler's memory until it returns, so it never reads freed memory).
class TC_API Scheduler final : public IExecutor
{
public:
    explicit Scheduler(SchedulerOptions options = {});
    explicit Scheduler(unsigned workerCount);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Starts `callable` as a stackful task. Throws what allocating the task's block, the
    // callable's move or queueing the task throws (std::bad_alloc); nothing is started then.
    //
    // Stacks: a task takes its stack from the scheduler's pool when it first runs and gives it
    // back the moment it ends, so a queued task and a finished one hold none (a callable too
    // large for the task's block -- over 128 bytes -- lives at the top of a stack taken here, and
    // a failure to get it throws here). When no stack can be had as the task is about to run,
    // the task ends without running its callable (which is destroyed) and Join rethrows the
    // allocator's exception; a detached task terminates the process with a message naming it.
    // On a scheduler with workers, a task that ends hands its stack straight to the next task
    // its worker would run, when that one has never run and wants a stack of the same size:
    // it starts there without a switch (taskLeave and taskEnter are still called, in order).
    template <class F>
    JoinHandle Start(F&& callable, TaskOptions options = {})
    {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "a task is a callable taking no arguments");
        void* slot = nullptr;
        detail::Task* task = AllocateTask(options, detail::TaskBodyFor<Fn>::body, slot);
        try
        {
            ::new (slot) Fn(std::forward<F>(callable));
        }
        catch (...)
        {
            FreeUnstartedTask(task);
            throw;
        }
        return JoinHandle(LaunchTask(task));
    }

    // IExecutor: queues a coroutine resumption (Priority::Normal). Thread-safe, never inline.
    // Throws std::logic_error, queueing nothing, once the destructor made its last look (above).
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override;
    void Submit(ParkedWork work) override;
    void Submit(std::coroutine_handle<> handle, Priority priority);

    // co_await scheduler.Schedule(): continue the awaiting coroutine on this scheduler.
    auto Schedule(Priority priority = Priority::Normal) noexcept
    {
        struct Awaiter
        {
            Scheduler* scheduler;
            Priority priority;
            bool await_ready() const noexcept { return false; }
            void await_suspend(std::coroutine_handle<> handle) { scheduler->Submit(handle, priority); }
            void await_resume() const noexcept {}
        };
        return Awaiter{this, priority};
    }

    // ---- pumping (schedulers without workers; host thread only) ----
    // Runs what was queued when the call began, at most maxTasks of it. Never blocks.
    PumpResult RunPending(std::size_t maxTasks = SIZE_MAX, Priority lowest = Priority::Normal);
    // Runs work until the budget is spent, checking the clock between tasks; always runs at least
    // one when any is queued, so it overruns the budget by at most one task. The check between
    // tasks reads the deadline clock (<TC/detail/DeadlineClock.h>: one TSC read where the TSC
    // is the kernel's clock), whose answer may run up to 25 us ahead of the steady clock's: a
    // turn may end that much before its budget is spent, never later for it.
    PumpResult RunFor(Duration budget, Priority lowest = Priority::Normal);
    // Runs until nothing is queued (tasks suspended on something else do not count).
    PumpResult RunUntilIdle(Priority lowest = Priority::Normal);
    // Blocks the host until work is queued or the timeout passes; true if work is queued.
    bool WaitForWork(Duration timeout);

    // ---- shutdown ----
    // Finishes every task, timed parked coroutine and queued item (pumping the schedulers the
    // calling thread hosts meanwhile), closes to new work from outside and joins the workers
    // (above); the object stays, refusing submissions, until destroyed. Any thread may call it,
    // any number of times (a second call waits for the first to finish), but not concurrently
    // with the destructor, and not from the scheduler's own task or pump: that throws
    // std::logic_error (it would wait for itself; ~Scheduler called there terminates with that
    // message). On a scheduler without workers, called on another thread than its host, it
    // follows the class comment's rules for destroying one there.
    void Stop();
    // True once Stop (or the destructor) has finished stopping it.
    bool Stopped() const noexcept;
    // Asks long tasks to stop; they poll ShutdownRequested(). Starting new tasks still works.
    void RequestShutdown() noexcept;
    bool ShutdownRequested() const noexcept;

    unsigned WorkerCount() const noexcept;
    const std::string& Name() const noexcept;
    // Tasks started and not yet finished (suspended, queued or running). Exact while no task
    // starts or ends; while they do, never zero unless at some moment during the call no task
    // lived, and possibly more than ever lived at once (the starts made while it reads count).
    // A task no longer counts by the time its Join returns.
    std::size_t LiveTasks() const noexcept;

    // The scheduler running the calling task or pumping work on this thread, or nullptr.
    static Scheduler* Current() noexcept;

    // Gives the stacks the shared pool holds when it is called back to the stack allocator (after a
    // burst, say: a level load that ran many tasks at once) and returns how many bytes of stack
    // that was (their guard regions not counted); stacks released meanwhile may stay. Stacks in use
    // and the workers' own caches (up to 64 default-size stacks each) stay. Any thread, any time
    // while the scheduler lives; the pool refills as tasks end, up to
    // SchedulerOptions::stackPoolBytes.
    std::size_t TrimStackPool() noexcept;

    // Starts `count` tasks in one step, task i calling body(i) on its own copy of `body`: their
    // blocks are taken together and they are queued with one enqueue and one wake-up.
    //     auto handles = scheduler.StartBulk(2000, [&](std::size_t i) { Update(objects[i]); });
    /// - Each task is a task as Start makes it: options (name, priority, stack size), hooks,
    ///   DumpTasks, JoinHandle semantics, stacks taken when it first runs.
    /// - Callable like Start from a task, a converted thread or the host. All or nothing: when a
    ///   block, a copy of `body` or the enqueue throws, no task was started and it rethrows.
    /// - On a scheduler with one worker or none they start in index order.
    /// - The batch holds all its blocks at once: past a few thousand tasks (what the pools keep),
    ///   start slices of that size, whose tasks then reuse the blocks of those that ended.
    template <class F>
    std::vector<JoinHandle> StartBulk(std::size_t count, const F& body, TaskOptions options = {})
    {
        std::vector<JoinHandle> handles(count);
        StartBulkTasks(count, options, BulkBody<F>(), &detail::IndexedCallFor<F>::Construct, &body,
                       handles.data());
        return handles;
    }
    // StartBulk's tasks, detached: none can be joined (count them down on a WaitGroup), and one
    // whose body throws ends the process as a detached task does.
    template <class F>
    void StartBulkDetached(std::size_t count, const F& body, TaskOptions options = {})
    {
        StartBulkTasks(count, options, BulkBody<F>(), &detail::IndexedCallFor<F>::Construct, &body,
                       nullptr);
    }

private:
    template <class F>
    static const detail::TaskBody& BulkBody()
    {
        static_assert(std::is_invocable_v<F&, std::size_t>, "a bulk body takes the task's index");
        static_assert(std::is_copy_constructible_v<F>, "each task of a bulk start copies the body");
        return detail::TaskBodyFor<detail::IndexedCall<F>>::body;
    }
    // handles: `count` empty handles to fill, or nullptr to start them detached.
    void StartBulkTasks(std::size_t count, const TaskOptions& options, const detail::TaskBody& body,
                        detail::BulkConstruct construct, const void* source, JoinHandle* handles);
    friend void MoveCurrentTaskTo(Scheduler& target, Priority priority);
    detail::Task* AllocateTask(const TaskOptions& options, const detail::TaskBody& body, void*& slot);
    void FreeUnstartedTask(detail::Task* task) noexcept;
    detail::Task* LaunchTask(detail::Task* task); // frees the task (callable too) if it throws

    std::unique_ptr<detail::SchedulerCore> core_;
};

// Lets other work ready on the calling task's worker run, then continues; from a converted
// thread, std::this_thread::yield().
/// - The worker's next pick passes over the caller: it runs the most urgent other ready item --
///   High before Normal, whatever the caller's priority, within what a pump's `lowest` allows --
///   and the caller continues in its priority's turn after that. With nothing else ready, the
///   caller continues at once.
/// - So a yield always lets one other ready item run when there is one: a High task yielding in
///   a loop lets one Normal item through per yield while no other High work is ready, and a
///   Normal task that yields lets the ready High work go first.
/// - Tasks that yield in turn are ready work to each other: two High tasks yielding in a loop
///   hold Normal work back as long as they loop. To wait for Normal work, wait on an event.
TC_API void YieldTask();

// Moves the calling task to `target`: it continues there (on a worker, or when the host pumps).
// "Run the rest of this on the main thread" is MoveCurrentTaskTo(hostScheduler). Throws
// std::logic_error, the task staying where it is, once target's destructor made its last look.
TC_API void MoveCurrentTaskTo(Scheduler& target, Priority priority = Priority::Normal);

// True when the scheduler running the calling task was asked to shut down.
TC_API bool ShutdownRequested() noexcept;
} // namespace TC
