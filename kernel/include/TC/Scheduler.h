#pragma once
// Scheduler: runs stackful tasks and coroutine resumptions on its own workers or pumped by a host
// thread (a game's main loop); it is the current executor while it runs them.
//   TC::Scheduler scheduler(4);
//   TC::JoinHandle task = scheduler.Start([] { /* may wait on any primitive */ });
//   task.Join();

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

// How a task's callable is run and destroyed; it lives in the task's block up to 128 bytes
// (64-byte aligned at most), else at the top of a stack taken at Start.
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

// Which queue a task or resumption waits in. Strict: ready High work runs before any Normal work,
// but at the pick right after a YieldTask; a pump's `lowest` can run High only.
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

// Observers the host installs: name threads, set FTZ/DAZ, feed a profiler's fiber API.
/// - Hooks run on the thread concerned and must not suspend.
/// - A hook that throws ends the process ("scheduler hook threw", naming hook and exception).
/// - A task starts with the floating-point control state (rounding, masks, flush-to-zero; MXCSR
///   and x87 control word) of its worker after threadStart -- of the host as its pump call began
///   running work -- and keeps its own across waits, yields and moves. Exception flags are status:
///   they stay with the thread (test them with fetestexcept between two waits).
struct SchedulerHooks
{
    // On each worker thread as it starts / just before it ends, with its 0-based index.
    // threadStop runs after the worker left: Current() is nullptr and a Submit there is refused.
    std::function<void(unsigned workerIndex)> threadStart;
    std::function<void(unsigned workerIndex)> threadStop;
    // As a task starts or continues / stops (suspends, yields, moves, finishes): matched pairs on
    // one thread; the name is TaskOptions::name (a stable pointer) or "task".
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
    // Page guard below each stack, rounded up to pages (at least one); address space only. A frame
    // larger than it may jump it unless built with -fstack-clash-protection.
    std::size_t stackGuardBytes = kDefaultStackGuardBytes;
    IdlePolicy idlePolicy = IdlePolicy::SpinThenSleep;
    // nullptr: DefaultStackAllocator(). Must outlive the scheduler and its tasks that moved away;
    // a stack always returns to the scheduler that took it (to this allocator once it is gone).
    IStackAllocator* stackAllocator = nullptr;
    // Stack bytes pooled beyond the workers' caches (64 default stacks each; guards not counted);
    // more goes back to the allocator. Default: 1024 Medium stacks; 0: none; SIZE_MAX: no limit.
    std::size_t stackPoolBytes = 64 * 1024 * 1024;
    std::string name = "TC";
    SchedulerHooks hooks;
    // Host-pumped only: nonzero picks ready items pseudo-randomly from this seed (replayable
    // interleavings); 0: FIFO.
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
    std::size_t pending = 0; // still queued at return (approximate while others submit)
    Duration left;           // RunFor: budget not spent (zero if overrun); others: zero
};

// Owns the right to join one task: Join waits (task, converted thread or host) and rethrows.
//   auto handle = scheduler.Start(work);  handle.Join();
/// - Destroying a joinable handle detaches; a detached task that throws terminates, naming it.
/// - A handle may outlive its Scheduler: joining or dropping it afterwards is fine.
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

    // Waits for the task's end, rethrows what escaped it (or the stack allocator's exception),
    // and empties the handle. Precondition: Joinable() (std::logic_error otherwise).
    void Join();
    // Lets the task run on unobserved. No-op on an empty handle.
    void Detach() noexcept;
    bool Joinable() const noexcept { return task_ != nullptr; }
    // True once the task has ended and given up its stack (Join would not wait).
    bool IsFinished() const noexcept;

private:
    friend class Scheduler;
    explicit JoinHandle(detail::Task* task) noexcept : task_(task) {}
    detail::Task* task_ = nullptr;
};

// Runs stackful tasks and coroutine resumptions (lifetime rules: guides/lifetimes-and-sizing.md).
//   TC::Scheduler host;  host.Start(work);  host.RunFor(std::chrono::milliseconds(2));
/// Threads:
/// - With workers: a pool; a task runs on any worker, so its thread-locals may change at a wait.
/// - Without: only its host thread pumps it -- the first thread that pumps it, or its creating
///   thread if that waits (converted-thread wait) first.
/// - A host thread's waits run the work of every scheduler it hosts (up to four; a fifth replaces
///   the first), at any depth; so do Stop and ~Scheduler called there.
/// - Work run inside such a wait must not throw out of the pump: "work threw inside a wait",
///   naming the exception, ends the process in every build. RunPending and friends rethrow it.
/// Submission (Start, Submit): any thread, never blocks on the work, never runs it inline. With
/// at most one worker, each thread's submissions of one priority start in order.
/// Stopping (Stop, or ~Scheduler, which stops first):
/// - Requests shutdown, then waits until every task ended and every timed parked coroutine
///   (SuspendTaskForAsync, WaitAsync(timeout), Schedule()) was resumed and ran; queued
///   resumptions run; workers join (~Scheduler then frees the stacks).
/// - Meanwhile the caller pumps this scheduler if workerless and every scheduler it hosts (not
///   from inside a task), so schedulers stop in any order.
/// - A task never resumed makes it wait for ever; after 5 s it prints one hang report (name,
///   state, what each task waits on, as TC::DumpTasks writes it) to stderr.
/// - Start once Stop began throws std::logic_error.
/// - Submit and MoveCurrentTaskTo are accepted and run until Stop's last look: last task ended,
///   last timed coroutine resumed, shared queue empty or past the backlog it held at Stop (a
///   fast submitter delays it by that backlog only).
/// - After it, from outside its workers and pump, they throw std::logic_error ("Submit refused:
///   the scheduler is stopping or stopped") and hand nothing over; a racing call is refused or
///   run, never lost. Never refused: ResumeTask of its tasks, resuming its timed coroutines.
/// - A coroutine parked on it without a deadline is not waited for: resumed after the last look
///   it terminates; after ~Scheduler returned, undefined. Resume it first, or give it a deadline.
/// - A stopped scheduler refuses until destroyed: Stop(), join submitting threads, destroy.
/// - Calls during the destructor are answered until Stop returned inside it; later, undefined.
/// - After ~Scheduler returns nothing of it runs: no worker, hook or parked-coroutine deadline.
/// - A taskLeave/taskEnter hook run by MoveCurrentTaskTo must not wait for the target's stopper.
/// A workerless scheduler is best stopped and destroyed on its host thread. On another:
/// - the host must not pump it, resume its tasks, submit or release its JoinHandles meanwhile;
/// - a host inside a wait takes turns with the destructor pumping its work, and stops once the
///   destructor returned (it never reads freed memory).
class TC_API Scheduler final : public IExecutor
{
public:
    explicit Scheduler(SchedulerOptions options = {});
    explicit Scheduler(unsigned workerCount);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Starts `callable` as a stackful task; throws what allocating, moving or queueing throws
    // (std::bad_alloc), starting nothing.
    /// - The stack is taken when the task first runs and returned when it ends (a callable over
    ///   128 bytes takes it here, and a failure throws here).
    /// - No stack as it is about to run: the callable is destroyed unrun and Join rethrows the
    ///   allocator's exception; a detached task terminates, naming it.
    /// - An ending task may hand its stack to its worker's next, never-run task of the same
    ///   stack size, without a switch (taskLeave and taskEnter still called, in order).
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

    // IExecutor: queues a resumption (Normal), any thread, never inline; std::logic_error,
    // queueing nothing, after Stop's last look.
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
    // Runs work until the budget is spent, checking the deadline clock between items: at least
    // one item if any is queued (overrun at most one item); may end up to 25 us early.
    PumpResult RunFor(Duration budget, Priority lowest = Priority::Normal);
    // Runs until nothing is queued (tasks suspended on something else do not count).
    PumpResult RunUntilIdle(Priority lowest = Priority::Normal);
    // Blocks the host until work is queued or the timeout passes; true if work is queued.
    bool WaitForWork(Duration timeout);

    // ---- shutdown ----
    // Finishes all work, closes to outside work and joins the workers (above); then refuses
    // submissions until destroyed. Any thread, any number of times (a second call waits).
    /// - Not concurrently with the destructor.
    /// - From its own task or pump: std::logic_error (~Scheduler there terminates, same message).
    /// - Workerless, off its host thread: the class's rules for destroying it there hold.
    void Stop();
    // True once Stop (or the destructor) has finished stopping it.
    bool Stopped() const noexcept;
    // Asks long tasks to stop; they poll ShutdownRequested(). Starting new tasks still works.
    void RequestShutdown() noexcept;
    bool ShutdownRequested() const noexcept;

    unsigned WorkerCount() const noexcept;
    const std::string& Name() const noexcept;
    // Tasks started and not finished. Exact while none starts or ends; else zero only if none
    // lived at some moment of the call. A task no longer counts once its Join returned.
    std::size_t LiveTasks() const noexcept;

    // The scheduler running the calling task or pumping work on this thread, or nullptr.
    static Scheduler* Current() noexcept;

    // Frees the shared pool's stacks (not in-use ones, not the workers' caches) to the allocator
    // and returns their bytes, guards not counted. Any thread; refills up to stackPoolBytes.
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

// Lets other work ready on the caller's worker run, then continues; on a converted thread,
// std::this_thread::yield().
/// - The next pick runs the most urgent other ready item (High first, within a pump's `lowest`);
///   the caller then continues in its priority's turn, at once if nothing else is ready.
/// - Tasks yielding in turn are ready work to each other: two High yielders hold Normal work back.
TC_API void YieldTask();

// Moves the calling task to `target` (a worker, or its host's pump); std::logic_error, the task
// staying put, after target's last look.
TC_API void MoveCurrentTaskTo(Scheduler& target, Priority priority = Priority::Normal);

// True when the scheduler running the calling task was asked to shut down.
TC_API bool ShutdownRequested() noexcept;
} // namespace TC
