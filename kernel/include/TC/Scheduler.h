#pragma once
// Scheduler: runs stackful tasks and coroutine resumptions on its workers or a host's pump, as
// the current executor.
//   TC::Scheduler scheduler(4);
//   TC::JoinHandle task = scheduler.Start([] { /* may wait on any primitive */ });
//   task.Join();

#include <TC/Duration.h>
#include <TC/Executor.h>
#include <TC/BlockAllocator.h>
#include <TC/StackAllocator.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/BulkStart.h>
#include <TC/detail/CoroutineZone.h>
#include <TC/detail/Export.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <stop_token>
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

// A task's callable: in its block up to 128 bytes (alignment <= 64), else atop its stack.
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

/// - Strict: ready work runs most urgent first, except at the pick right after a YieldTask; Low
///   runs whenever nothing above is ready. Other values: std::invalid_argument.
enum class Priority : std::uint8_t
{
    Critical = 0, // ahead of the frame's work
    High = 1,     // this frame's work
    Normal = 2,   // background work
    Low = 3,      // idle time (streaming)
};
inline constexpr std::size_t kPriorityCount = 4;

// What an idle worker (or a host in WaitForWork) does.
enum class IdlePolicy : std::uint8_t
{
    SpinThenSleep, // spin about 20 us, then sleep until woken
    Spin,          // never sleeps; busy core
    Yield,         // sched_yield in a loop
    Sleep,
};

// Observers run on the thread concerned; must not suspend. One that throws ends the process
// ("scheduler hook threw").
/// - A task starts with the floating-point control state of its worker after threadStart (of the
///   host as its pump began) and keeps its own across waits, yields and moves; exception flags
///   stay with the thread.
struct SchedulerHooks
{
    // As each worker (0-based index) starts / ends; in threadStop Current() is nullptr and Submit
    // is refused.
    std::function<void(unsigned workerIndex)> threadStart;
    std::function<void(unsigned workerIndex)> threadStop;
    // As a task starts or resumes / stops running: pairs on one thread; name: TaskOptions::name
    // or "task"; task.Id() is unique in the process.
    std::function<void(TaskHandle task, const char* name)> taskEnter;
    std::function<void(TaskHandle task, const char* name)> taskLeave;
    /// Around a coroutine resumption it (or a strand on it) runs: pairs on one thread, entered as
    /// the resumed chain's awaiter returns to its body (one of the library's: a coroutine that
    /// resumes in an awaiter of its own gets no zone). chainId: never 0 nor reused; name:
    /// Task::SetName's, a promise's CoroutineIdentity, else "coroutine".
    std::function<void(std::uint64_t chainId, const char* name)> coroutineEnter;
    std::function<void(std::uint64_t chainId, const char* name)> coroutineLeave;
};

struct TC_API SchedulerOptions
{
    // 0: the host pumps it.
    unsigned workerCount = 0;
    // Usable stack per task, guard on top.
    std::size_t stackSize = StackSize::Medium;
    StackGuard stackGuard = StackGuard::Page;
    // Rounded up to pages (at least one).
    std::size_t stackGuardBytes = kDefaultStackGuardBytes;
    IdlePolicy idlePolicy = IdlePolicy::SpinThenSleep;
    // nullptr: DefaultStackAllocator(). Must outlive the scheduler and its tasks that moved away.
    IStackAllocator* stackAllocator = nullptr;
    // Stack bytes pooled beyond the workers' caches (64 stacks each), guards not counted; the rest
    // goes back to the allocator.
    std::size_t stackPoolBytes = 64 * 1024 * 1024;
    // Default of TaskOptions::allocator; nullptr: the scheduler's pools.
    IBlockAllocator* taskAllocator = nullptr;
    std::string name = "TC";
    SchedulerHooks hooks;
    // Host-pumped only: nonzero picks ready items pseudo-randomly; 0: FIFO.
    std::uint64_t shuffleSeed = 0;
};

// TaskOptions::worker: any worker runs the task.
inline constexpr unsigned kAnyWorker = ~0u;

struct TaskOptions
{
    const char* name = nullptr; // stable string, for hooks and hang reports
    Priority priority = Priority::Normal;
    std::size_t stackSize = 0; // 0: the scheduler's
    /// - worker: the only worker (0-based) that starts and resumes the task; workerless, 0: the
    ///   host. Past the last: std::out_of_range, starting nothing.
    /// - Pinned, MoveCurrentTaskTo another scheduler throws std::logic_error.
    unsigned worker = kAnyWorker;
    /// The task block's source; nullptr: SchedulerOptions::taskAllocator.
    /// - One Allocate per task at Start (a throw starts nothing), never pooled.
    /// - Freed by the later of the task's end and its JoinHandle's release, even past ~Scheduler.
    IBlockAllocator* allocator = nullptr;
    std::stop_token stopToken{}; // ends the task's stop-aware waits (TaskStop.h, SuspendTaskFor)
};

// What a pump call did and what it left.
struct PumpResult
{
    std::size_t ran = 0;
    std::size_t pending = 0; // queued at return (approximate while others submit)
    Duration left;           // RunFor: unspent budget (zero if overrun); others: zero
};

// The right to join one task. Destroying it detaches; may outlive its Scheduler.
//   auto handle = scheduler.Start(work);  handle.Join();
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

    // Waits (task, thread or host) for the end, rethrows what escaped, empties the handle. Not
    // Joinable(): std::logic_error.
    void Join();
    // A detached task that throws terminates, naming it. No-op when empty.
    void Detach() noexcept;
    bool Joinable() const noexcept { return task_ != nullptr; }
    // Ended and gave up its stack.
    bool IsFinished() const noexcept;

private:
    friend class Scheduler;
    explicit JoinHandle(detail::Task* task) noexcept : task_(task) {}
    detail::Task* task_ = nullptr;
};

// Runs stackful tasks and coroutine resumptions (lifetimes: guides/lifetimes-and-sizing.md).
//   TC::Scheduler host;  host.Start(work);  host.RunFor(std::chrono::milliseconds(2));
/// Threads:
/// - With workers: a task runs on any worker; its thread-locals may change at a wait.
/// - Without: only its host thread pumps it: the first thread that pumps it, or its creator if
///   that waits first.
/// - A host thread's waits (and Stop, ~Scheduler there) run the work of every scheduler it hosts
///   (up to four; a fifth replaces the first), at any depth.
/// - Work run inside such a wait must not throw: "work threw inside a wait", naming the
///   exception, ends the process. RunPending and friends rethrow it.
/// Start, Submit: any thread; never block on or run the work inline. With at most one worker,
/// each thread's submissions of one priority start in order.
/// Stopping (Stop, or ~Scheduler, which stops first):
/// - Requests shutdown; waits until every task ended and every timed parked coroutine
///   (SuspendTaskForAsync, WaitAsync(timeout), Schedule()) was resumed and ran; queued
///   resumptions run; workers join; ~Scheduler then frees the stacks.
/// - Meanwhile the caller (not inside a task) pumps this scheduler if workerless and every
///   scheduler it hosts.
/// - A task never resumed makes it wait for ever; after 5 s it prints one hang report
///   (as TC::DumpTasks) to stderr.
/// - Start once Stop began throws std::logic_error.
/// - Submit and MoveCurrentTaskTo run until Stop's last look: last task ended, last timed
///   coroutine resumed, shared queue empty or past its backlog at Stop.
/// - Later, from outside its workers and pump, they throw std::logic_error ("Submit refused:
///   the scheduler is stopping or stopped"), handing nothing over; a racing call is refused or
///   run, never lost. Never refused: ResumeTask of its tasks, resuming its timed coroutines.
/// - A coroutine parked on it without a deadline is not waited for: resumed after the last look
///   it terminates; after ~Scheduler, undefined. Resume it first, or give it a deadline.
/// - Stopped, it refuses until destroyed: Stop(), join submitting threads, destroy.
/// - Calls during the destructor are answered until Stop returned inside it; later, undefined.
/// - After ~Scheduler nothing of it runs: no worker, hook or parked-coroutine deadline.
/// - A taskLeave/taskEnter hook run by MoveCurrentTaskTo must not wait for the target's stopper.
/// Workerless, stopped and destroyed off its host thread:
/// - the host must not pump it, resume its tasks, submit or release its JoinHandles meanwhile;
/// - a host inside a wait takes turns with the destructor pumping, and stops once it returned.
class TC_API Scheduler final : public IExecutor
{
public:
    explicit Scheduler(SchedulerOptions options = {});
    explicit Scheduler(unsigned workerCount);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Starts `callable` as a stackful task; what allocating, moving or queueing throws
    // propagates, starting nothing.
    /// - The stack is taken at first run (here for a callable over 128 bytes, throwing here) and
    ///   returned at the end.
    /// - No stack at first run: the callable is destroyed unrun; Join rethrows the allocator's
    ///   exception; a detached task terminates, naming it.
    /// - An ending task may hand its stack to its worker's next unstarted task of the same stack
    ///   size without a switch (taskLeave, taskEnter still called in order).
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

    // IExecutor: queues a resumption (Normal); any thread, never inline. After Stop's last look
    // std::logic_error, queueing nothing.
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override;
    void Submit(ParkedWork work) override;
    void Submit(std::coroutine_handle<> handle, Priority priority);

    // co_await scheduler.Schedule(): continue on this scheduler.
    struct ScheduleAwaiter
    {
        union
        {
            Scheduler* scheduler;
            CoroutineIdentity* identity; // once submitted (the frame grows by nothing)
        };
        Priority priority;
        bool await_ready() const noexcept { return false; }
        template <class Promise>
        void await_suspend(std::coroutine_handle<Promise> handle)
        {
            Scheduler* const target = scheduler;
            identity = detail::IdentityOfPromise(handle);
            target->Submit(handle, priority);
        }
        void await_resume() const noexcept { detail::IdentifyCoroutine(identity); }
    };
    ScheduleAwaiter Schedule(Priority priority = Priority::Normal) noexcept
    {
        return ScheduleAwaiter{{this}, priority};
    }

    // ---- pumping (workerless; host thread only; levels up to `lowest`) ----
    // Runs what was queued at the call, at most maxTasks. Never blocks.
    PumpResult RunPending(std::size_t maxTasks = SIZE_MAX, Priority lowest = Priority::Low);
    // Runs until the budget is spent: at least one item if any (overrun at most one); may end up
    // to 25 us early.
    PumpResult RunFor(Duration budget, Priority lowest = Priority::Low);
    // Runs until nothing is queued (suspended tasks do not count).
    PumpResult RunUntilIdle(Priority lowest = Priority::Low);
    // Blocks until work is queued (true) or the timeout passes.
    bool WaitForWork(Duration timeout);

    // ---- shutdown ----
    // Finishes all work, closes to outside work, joins the workers (above). Any thread, any
    // number of times (a second call waits).
    /// - Not concurrently with the destructor.
    /// - From its own task or pump: std::logic_error (~Scheduler there terminates, same message).
    /// - Workerless, off its host thread: the class's rules for that hold.
    void Stop();
    // True once Stop (or the destructor) finished.
    bool Stopped() const noexcept;
    // Asks long tasks to stop (they poll ShutdownRequested()); Start still works.
    void RequestShutdown() noexcept;
    bool ShutdownRequested() const noexcept;

    unsigned WorkerCount() const noexcept;
    const std::string& Name() const noexcept;
    // Tasks started and not finished (not once Join returned). Exact while none starts or ends;
    // else zero only if none lived at some moment of the call.
    std::size_t LiveTasks() const noexcept;

    // The scheduler running the calling task or pumping on this thread, or nullptr.
    static Scheduler* Current() noexcept;

    // Frees the shared pool's idle stacks (not workers' caches) to the allocator; returns their
    // bytes, guards not counted. Any thread; the pool refills up to stackPoolBytes.
    std::size_t TrimStackPool() noexcept;

    // Starts `count` tasks in one enqueue and wake-up, task i calling body(i) on its own copy.
    //     auto handles = scheduler.StartBulk(2000, [&](std::size_t i) { Update(objects[i]); });
    /// - Each is a task as Start makes it (options, hooks, DumpTasks, JoinHandle, stacks).
    /// - Callable where Start is. All or nothing: if a block, a copy of `body` or the enqueue
    ///   throws, no task started and it rethrows.
    /// - With one worker or none they start in index order.
    /// - The batch holds all its blocks at once: past a few thousand tasks, start slices.
    template <class F>
    std::vector<JoinHandle> StartBulk(std::size_t count, const F& body, TaskOptions options = {})
    {
        std::vector<JoinHandle> handles(count);
        StartBulkTasks(count, options, BulkBody<F>(), &detail::IndexedCallFor<F>::Construct, &body,
                       handles.data());
        return handles;
    }
    // StartBulk, detached (count them on a WaitGroup); a throwing body ends the process.
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

// Lets other ready work on the caller's worker run, then continues; on a converted thread,
// std::this_thread::yield().
/// - The next pick runs the most urgent other ready item (within a pump's `lowest`); the caller
///   continues in its priority's turn, at once if nothing else is ready.
/// - Yielding tasks are ready work to each other: two High yielders hold Normal work back.
TC_API void YieldTask();

// Moves the calling task to `target`; after target's last look std::logic_error, staying put.
TC_API void MoveCurrentTaskTo(Scheduler& target, Priority priority = Priority::Normal);

// True when the calling task's scheduler was asked to shut down.
TC_API bool ShutdownRequested() noexcept;
} // namespace TC
