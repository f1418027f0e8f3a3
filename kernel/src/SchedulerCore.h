#pragma once
// SchedulerCore: the state behind a TC::Scheduler -- its queues, workers, sleepers and stacks.
// Scheduler*.cpp and Task*.cpp implement it (SchedulerInternals.h holds what they share);
// Suspend.cpp and ThreadWaiter.cpp call into it. Its workers: SchedulerWorker.h.

#include "Resume.h"
#include "SchedulerWorker.h"
#include "SharedQueue.h"
#include "Task.h"
#include "TaskRegistry.h"
#include "ThreadState.h"
#include "Timers.h"
#include "context/Context.h"
#include "context/FloatingPointControl.h"

#include <TC/Scheduler.h>
#include <TC/detail/DeadlineClock.h>
#include <TC/detail/SpinLock.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace TC::detail
{
class SchedulerCore
{
public:
    SchedulerCore(Scheduler* owner, SchedulerOptions options);
    ~SchedulerCore();

    Scheduler* owner;
    SchedulerOptions options;
    IStackAllocator* allocator;
    std::size_t defaultStackSize;
    bool taskHooks;
    bool coroutineHooks;

    // ---- queues ----
    // From this scheduler's own worker the item stays in its local queue (no atomic at all);
    // only when another worker sleeps and this one already has work queued does it go where
    // that worker can take it. Otherwise the shared queue (one enqueue, plus a wake-up when a
    // worker sleeps).
    // From outside the core's threads, `arrival` says whether the destructor may refuse it.
    void Enqueue(std::uintptr_t item, Priority priority, Arrival arrival)
    {
        EnqueueFrom(CurrentThread().worker, item, priority, arrival);
    }
    // The same, for a caller that has already read the calling thread's worker (or nullptr).
    // The host thread of a scheduler without workers queues on the host worker between pumps
    // too (HostWorkerOfThisThread), whatever it submits: starts, resumes, coroutines.
    void EnqueueFrom(Worker* worker, std::uintptr_t item, Priority priority, Arrival arrival)
    {
        if (LocalQueue* queue = OwnQueueFor(worker, priority))
        {
            queue->Push(item);
            return;
        }
        if (worker && worker->core == this)
        {
            EnqueueShared(item, priority); // another worker sleeps and this one has work queued
            return;
        }
        EnqueueFromOutside(item, priority, arrival);
    }
    // EnqueueFrom's common case alone, with no call in it (every resume's path): true when the
    // item went to `worker`'s local queue without growing it; false leaves it to EnqueueFrom.
    bool TryEnqueueLocal(Worker* worker, std::uintptr_t item, Priority priority) noexcept
    {
        LocalQueue* queue = OwnQueueFor(worker, priority);
        return queue && queue->TryPush(item);
    }
    // The queue of `worker` (the calling thread's, or nullptr) that takes an item of `priority`
    // when it is one of this core's workers, unless another worker sleeps while this one already
    // has work queued (then the item goes where the sleeper can take it); else nullptr.
    LocalQueue* OwnQueueFor(Worker* worker, Priority priority) noexcept
    {
        if (!worker || worker->core != this)
            return nullptr;
        LocalQueue& queue = worker->local[static_cast<std::size_t>(priority)];
        if (!queue.IsEmpty() && sleepers_.load(std::memory_order_relaxed) != 0 &&
            HasWorkerThreads())
            return nullptr;
        return &queue;
    }
    // A pinned task (workers only): on its worker's own queue when that worker calls, else on
    // its pinned queue, waking it. A caller outside this core's threads holds a count of
    // enqueuing_ across it (EnterFromOutside), as for EnqueueShared.
    void EnqueuePinned(Worker* worker, Task* task);
    void EnqueuePinnedBulk(Worker* worker, Task* const* tasks, std::size_t count);
    // A resume of a pinned task from `worker` (the caller's, or nullptr): EnqueuePinned, counted
    // as a submission from outside when the caller is not one of this core's workers.
    void ResumePinned(Worker* worker, Task* task);
    // Moves what other threads queued for `worker` alone to its local queues; returns an item
    // that found no room there (to run now), else 0.
    std::uintptr_t TakePinned(Worker& worker) noexcept;
    // EnqueueFrom's path for a thread that runs none of this core's workers (out of line: the
    // host check stays off every resume's code). Throws std::logic_error for Arrival::New once
    // the destructor closed (EnterFromOutside).
    void EnqueueFromOutside(std::uintptr_t item, Priority priority, Arrival arrival);
    // Behind everything already queued (a yield or a move goes to the back of the line). A
    // caller outside this core's threads holds a count of enqueuing_ (EnterFromOutside) across
    // it; this core's own workers need none (the destructor joins them).
    void EnqueueShared(std::uintptr_t item, Priority priority);
    // The handshake between submissions from outside this core's threads and the destructor's
    // last look (Close). Enter counts the caller in enqueuing_; for Arrival::New it then throws
    // std::logic_error ("TC::Scheduler('<name>'): <call> called while the scheduler is being
    // destroyed"), counted out again, if the destructor has closed. Leave ends the count once
    // the caller's item is queued (or its enqueue failed).
    void EnterFromOutside(Arrival arrival, const char* call);
    void LeaveFromOutside() noexcept
    {
        // release: the caller's enqueue happens before the acquire load in Close or
        // ~SchedulerCore that reads the count this leaves.
        enqueuing_.fetch_sub(1, std::memory_order_release);
    }
    // Leaves, at the end of its scope, the count EnterFromOutside took for `core` (nullptr: no
    // count was taken), however the enqueue in between ends.
    struct LeaveFromOutsideAtExit
    {
        SchedulerCore* core;
        ~LeaveFromOutsideAtExit()
        {
            if (core)
                core->LeaveFromOutside();
        }
    };
    // The item a shared-queue entry stands for -- or, when it was queued behind an inbox item
    // that is still there, that one (older: it runs first, and the entry's item is kept in
    // `worker.deferred`, the worker's next pick).
    std::uintptr_t FromSharedQueue(Worker& worker, std::uintptr_t queued) noexcept;
    // The next item `worker` runs, of priority `lowest` or higher, or 0: most urgent first,
    // except that a task that has just yielded comes after any other ready item (YieldTask).
    std::uintptr_t TryDequeue(Worker& worker, Priority lowest) noexcept;
    // After a successful dequeue from global_[priority]: the bookkeeping every taker does.
    std::uintptr_t TakenFromShared(Worker& worker, std::size_t priority,
                                   std::uintptr_t item) noexcept;
    // Counts an item `worker` took from the shared queue or the inbox (Worker::takenShared).
    static void CountTakenShared(Worker& worker) noexcept
    {
        worker.takenShared.store(worker.takenShared.load(std::memory_order_relaxed) + 1,
                                 std::memory_order_relaxed);
    }
    // True when the shared queue may hold Critical or High work: a pick of less urgent work of
    // a worker's own (the direct switch, a finished task's stack handed on) must leave it to the
    // loop, which takes those first. Relaxed: urgent work submitted concurrently has no place in
    // line yet.
    bool MayHaveSharedUrgent() const noexcept
    {
        return sharedUrgent_.value.load(std::memory_order_relaxed) != 0;
    }
    // A pick from `queue`, one of the worker's own, that must leave the choice to the loop:
    // conservative for High (shared High may be younger), exact enough for Low (out of line).
    bool LeavesPickToLoop(const Worker& worker, const LocalQueue& queue) const noexcept
    {
        const std::size_t level = static_cast<std::size_t>(&queue - worker.local);
        if (level == 0)
            return false;
        if (level > PriorityIndex(Priority::Normal)) [[unlikely]]
            return HasQueuedWork(Priority::Normal);
        return MayHaveSharedUrgent();
    }
    // The local queue holding this worker's next pick, if that pick is a task (a coroutine needs
    // the loop's stack); for TryDequeueFreshTask, which looks before it takes.
    static LocalQueue* NextLocalTaskQueue(Worker& worker) noexcept
    {
        for (LocalQueue& queue : worker.local)
        {
            const std::uintptr_t item = queue.Front();
            if (item != 0)
                return item & kCoroutineTag ? nullptr : &queue;
        }
        return nullptr;
    }
    // The next task of this worker's own queues, if the front is a task; every
    // kFairnessInterval picks it answers nullptr so the loop can look at the shared queue.
    // (Its own loop, not NextLocalTaskQueue's: this is every switch's pick, and reading the
    // item once is 3 instructions shorter.)
    Task* TryDequeueLocalTask(Worker& worker) noexcept
    {
        if (--worker.fairnessCountdown == 0 || worker.preferShared || worker.HasPinnedArrivals())
        {
            worker.fairnessCountdown = 1; // the loop's next pick then looks at the shared queue
            return nullptr;
        }
        for (LocalQueue& queue : worker.local)
        {
            const std::uintptr_t item = queue.Front();
            if (item == 0)
                continue;
            if (item & kCoroutineTag || LeavesPickToLoop(worker, queue))
                return nullptr;
            queue.Pop();
            return reinterpret_cast<Task*>(item);
        }
        return nullptr;
    }
    // TryDequeueLocalTask's pick, taken only when it is a task that has never run and wants a
    // stack of `stackSize` (StartOnFinishedStack); anything else stays queued for the switch.
    Task* TryDequeueFreshTask(Worker& worker, std::size_t stackSize) noexcept
    {
        if (worker.fairnessCountdown <= 1 || worker.preferShared || worker.HasPinnedArrivals())
            return nullptr;
        LocalQueue* queue = NextLocalTaskQueue(worker);
        if (!queue || LeavesPickToLoop(worker, *queue))
            return nullptr;
        auto* task = reinterpret_cast<Task*>(queue->Front());
        if (task->contextReady || task->stack.base != nullptr || task->stack.size != stackSize)
            return nullptr;
        if (PumpTurn* turn = worker.pumpTurn) // a host pump's turn: within its budget only
        {
            if (static_cast<std::size_t>(queue - worker.local) >
                    static_cast<std::size_t>(turn->lowest) ||
                !turn->MayRunAnother())
                return nullptr;
            ++turn->ran;
        }
        queue->Pop();
        --worker.fairnessCountdown;
        // The task after this one starts next, in place, from this same check: fetch the block
        // lines it reads and writes now (a burst of 1000 queued starts spans 384 KB, past L1).
        if (std::uintptr_t following = queue->Front())
            for (std::size_t offset = 64; offset < kTaskBytes; offset += 64)
                __builtin_prefetch(reinterpret_cast<unsigned char*>(following) + offset, 1);
        return task;
    }
    bool HasQueuedWork(Priority lowest) const noexcept;
    std::size_t QueuedApprox(const Worker* worker, Priority lowest) const noexcept;

    // ---- sleeping ----
    void RegisterSleeper(Parker& parker);
    void UnregisterSleeper(Parker& parker) noexcept;
    void WakeOne() noexcept;
    // Wakes `worker` if it sleeps (pinned work for it alone).
    void WakeWorker(Worker& worker) noexcept;
    // Between a sleeper's registration and its queue re-check, and between a submitter's
    // enqueue and its sleeper check: one of the two sides always sees the other.
    void StoreLoadBarrier() noexcept;
    void WakeAll() noexcept;

    // ---- running ----
    void RunItem(Worker& worker, std::uintptr_t item);
    // A coroutine resumption inside a zone (coroutine hooks set).
    void ResumeInZone(std::coroutine_handle<> handle);
    void RunPostSwitch(Worker& worker, ThreadState& thread) noexcept;
    void WorkerMain(Worker& worker);
    PumpResult Pump(std::size_t maxTasks, Priority lowest, std::int64_t deadline, bool queuedAtStart);
    Worker& HostWorker() noexcept { return *workers_[0]; }

    // ---- the host's waits (ThreadWaiter.cpp) ----
    // A converted-thread wait pumps the schedulers its thread hosts, and ~Scheduler's drain may
    // run on another thread at the same time: for the scope of a turn, the thread that holds the
    // host pump (hostPumper_) runs the host worker, and the other sees Busy() and skips that round
    // (a wait) or waits for it (the drain). Its holder may enter again (a wait nested in its
    // pump). acquire on entry and release on leaving order each holder's pump after the previous
    // holder's, host worker and queues included.
    class HostPumpTurn
    {
    public:
        HostPumpTurn(SchedulerCore& core, ThreadState& thread) noexcept : core_(core)
        {
            ThreadState* holder = nullptr;
            entered_ = core.hostPumper_.compare_exchange_strong(
                holder, &thread, std::memory_order_acquire, std::memory_order_relaxed);
            busy_ = !entered_ && holder != &thread;
        }
        ~HostPumpTurn()
        {
            if (entered_)
                core_.hostPumper_.store(nullptr, std::memory_order_release);
        }
        HostPumpTurn(const HostPumpTurn&) = delete;
        HostPumpTurn& operator=(const HostPumpTurn&) = delete;
        bool Busy() const noexcept { return busy_; }

    private:
        SchedulerCore& core_;
        bool entered_ = false; // false when nested (it leaves nothing) or busy
        bool busy_ = false;
    };
    // The cores `thread` hosts, each held for the wait (a count on `blocks`, taken under the host
    // lock, where ~Scheduler unbinds its threads before it can free the core): a Scheduler
    // destroyed on another thread during the wait leaves its core to the wait's ReleaseForWait.
    // Returns how many it wrote to `out` (kMaxHosts at most); takes no lock when it hosts none.
    static std::size_t HoldHostsForWait(ThreadState& thread, SchedulerCore** out) noexcept;
    void ReleaseForWait() noexcept;
    // One round of a wait: pumps this core's host worker unless its Scheduler is gone (the
    // thread no longer hosts it), another thread is its host, or another thread pumps it now.
    // The thread that created it, waiting before any thread pumped it, becomes its host here.
    // True when it ran something.
    bool PumpForWait(ThreadState& thread);
    bool HasWorkerThreads() const noexcept { return options.workerCount > 0; }
    // On the host thread, after a pump: `queued` items of priority `lowest` or higher are left.
    // None of every priority means none of the host's own is in the shared queue: its later
    // submissions may go to the host worker's queue without overtaking them (hostLocalReady_).
    // The count is exact for the host's own completed submissions (only other threads' may be
    // in flight).
    void NoteHostQueues(Priority lowest, std::size_t queued) noexcept
    {
        if (lowest == kLowestPriority && queued == 0)
            hostLocalReady_ = true;
    }
    // The worker of this core whose queues and caches the calling thread may use without atomics:
    // the one it runs (a task, a worker loop or a pump of this core), or, on the host thread of a
    // scheduler without workers, the host worker also between pumps -- nobody else touches it,
    // since only that thread ever pumps it (CheckHostThread). nullptr otherwise.
    Worker* SubmittingWorker() noexcept
    {
        Worker* worker = CurrentThread().worker;
        if (worker && worker->core == this)
            return worker;
        return HostWorkerOfThisThread();
    }
    // nullptr on a scheduler with workers. Without: its host worker when called on its host thread
    // and the host's own queue may be used (hostLocalReady_), else nullptr -- also once the
    // Scheduler is being destroyed: its caches are emptied then for good (Orphan), and a block a
    // handle frees later must go to ReturnBlockSlow, which frees it. hostThread_ is written once,
    // before the release store of hostBound_ that the acquire load here reads; hostLocalReady_ is
    // read only on the host thread, its one writer; `stopping` is read with acquire, as the
    // destruction that set it happened before (on this thread, or synchronized with by the caller).
    Worker* HostWorkerOfThisThread() noexcept
    {
        if (HasWorkerThreads() || !hostBound_.load(std::memory_order_acquire) ||
            hostThread_ != std::this_thread::get_id() || !hostLocalReady_ ||
            stopping.load(std::memory_order_acquire))
            return nullptr;
        return &HostWorker();
    }
    void CheckHostThread(bool forDestructor);
    // True when the calling thread is this core's host, binding it when no thread is yet (one
    // compare-exchange decides between two threads that try at once).
    bool ClaimHost() noexcept;

    // ---- tasks ----
    Task* AllocateTask(const TaskOptions& options, const TaskBody& body, void*& slot);
    // Throws std::logic_error ("<call> refused") once the scheduler is stopping.
    void CheckStartAllowed(const char* call) const;
    std::size_t TaskStackSize(const TaskOptions& options) const noexcept;
    // A task in `block` (taken for `worker`, the calling thread's or nullptr, or from an
    // allocator: `fromAllocator`), its callable's place in `slot`. Throws what taking a stack for
    // a large callable throws; the block is then given back.
    Task* SetUpTask(void* block, Worker* worker, bool fromAllocator, std::size_t stackSize,
                    const TaskOptions& options, const TaskBody& body, void*& slot);
    // Scheduler::StartBulk (TaskBulk.cpp): `count` tasks allocated together, each callable made by
    // `construct`, counted and queued with one enqueue and one wake-up; written to `tasks`.
    // All or nothing: when anything throws, every task is freed and nothing was queued.
    void StartBulk(std::size_t count, const TaskOptions& options, const TaskBody& body,
                   BulkConstruct construct, const void* source, bool detached, Task** tasks);
    void FreeUnstartedTask(Task* task) noexcept;
    void Launch(Task* task); // throws what queueing throws; the task is then freed
    // Before the first switch to a task: gives it its stack and context. False when no stack
    // could be had: the task has then ended without running, with that exception for Join.
    // `worker`: the calling thread's.
    bool PrepareToRun(Task* task, Worker* worker) noexcept
    {
        return task->contextReady || BindStack(task, worker);
    }
    // After its last switch: its stack goes back (to `worker`'s cache, the calling thread's),
    // and it ends for its joiner (EndForJoiner), which may free its block.
    void FinishTask(Task* task, Worker* worker) noexcept;
    // Live tasks, counted as monotonic starts and ends: on `worker` when it is the calling
    // thread's worker of this core, else in startedElsewhere/endedElsewhere.
    void CountStart(Worker* worker) noexcept;
    void CountEnd(Worker* worker) noexcept;
    // At the end of `finished` (its callable destroyed), on its stack: when this worker's next
    // task has never run, that task takes over the stack and the running context and is
    // returned, to be run by the caller in place -- `finished` is then ended as FinishTask
    // would. nullptr: `finished` switches away as usual.
    Task* StartOnFinishedStack(Worker& worker, Task* finished) noexcept;
    // Its block's owner lets go (EndForJoiner says who); the block goes back to task->home.
    void FreeTask(Task* task) noexcept;

    // Scheduler::Stop and ~Scheduler (`call` names which, for the error): once, under stopLock_,
    // Shutdown and UnbindHostThreads; then `stopped`. Throws std::logic_error when called from
    // this core's own task or pump, which Shutdown would wait for.
    void Stop(const char* call);
    std::atomic<bool> stopped{false};
    // Stop: waits for every task and queued item (pumping, or on the workers), closes to
    // new work from outside (Close), waits for what was admitted before, then stops the workers.
    void Shutdown();
    // Shutdown's report, once it has waited 5 s: its task count and every task (DumpTasksOf).
    void ReportShutdownHang() const;
    // Makes this core the calling thread's host (its converted-thread waits pump it), in place
    // of the one it pumped before.
    void BindHost(ThreadState& thread) noexcept;
    // ~Scheduler, after Shutdown: no thread's waits pump this core any more.
    void UnbindHostThreads() noexcept;
    // The threads whose host this core is; under the host lock (SchedulerRun.cpp).
    std::vector<ThreadState*>& HostThreads() noexcept { return hostThreads_; }
    // Coroutines parked on this core's Scheduler from its own work with a deadline pending
    // (ArmTimer counts them, the delivery of their resumption uncounts them): Shutdown waits for
    // them as for tasks, so no timer fires into a destroyed scheduler.
    std::atomic<std::uint64_t> timedCoroutines{0};
    std::atomic<bool> shutdownRequested{false};
    std::atomic<bool> stopping{false};
    // Starts and ends of tasks not counted on a worker of this core (from outside, moves).
    std::atomic<std::uint64_t> startedElsewhere{0};
    std::atomic<std::uint64_t> endedElsewhere{0};
    // Tasks started and not ended; exact once nothing starts or ends (see there).
    std::size_t Live() const noexcept;
    // Items taken from the shared queue and the inbox so far, by every worker (Shutdown).
    std::uint64_t TakenShared() const noexcept;
    // Task blocks in existence -- held by a task or a JoinHandle, or free in a cache or the pool
    // -- plus one for the Scheduler object; whoever drops it to zero deletes this core. A task
    // that moved elsewhere keeps its block, so its stack comes back before the core can go. A block is
    // counted when it is made and when it is deleted, never as it is used, so a start and a free
    // through the caches touch no shared line.
    std::atomic<std::uint64_t> blocks{1};
    // True when that was the last count.
    bool DropBlocks(std::uint64_t count) noexcept
    {
        return count != 0 && blocks.fetch_sub(count, std::memory_order_acq_rel) == count;
    }
    // ~Scheduler, after Shutdown: frees every pooled and cached block and drops the Scheduler's
    // count; true when this core is to be deleted now (no JoinHandle holds a block).
    bool Orphan() noexcept;

    // Frees the stacks the shared pool holds at its first look (Scheduler::TrimStackPool); the
    // bytes freed.
    std::size_t TrimStackPool() noexcept;

private:
    // `worker`: the calling thread's (nullptr outside a worker); its cache is used when it is ours.
    StackMemory TakeStack(std::size_t size, Worker* worker);
    void ReturnStack(StackMemory stack, Worker* worker) noexcept;
    // How many more stacks of `size` the shared pool may hold (options.stackPoolBytes); under
    // stackLock_.
    std::size_t StackPoolRoom(std::size_t size) const noexcept;
    // A stack that came home from a task that ended on another core (ReturnStack): pooled here
    // unless the pool is full or the Scheduler is gone, else freed.
    void ReturnStackFromElsewhere(const StackMemory& stack) noexcept;
    // Gives a stack back to its origin's allocator.
    static void FreeStack(const StackMemory& stack) noexcept;
    std::size_t GuardBytes() const noexcept; // of the stacks this core takes
    // `worker`: the calling thread's if it is one of ours, else nullptr.
    inline void* TakeBlock(Worker* worker);
    // `count` blocks at once, linked through FreeTaskBlock::next: `worker`'s cache first, then
    // the pool under one lock, then new ones; or all from `source` when not nullptr. Throws what
    // allocating throws, keeping none.
    FreeTaskBlock* TakeBlocks(std::size_t count, Worker* worker, IBlockAllocator* source);
    // Queues StartBulk's tasks: on `worker`'s own queue when it runs one (a scheduler with one
    // worker, or its host), else on the shared queue; then wakes up to `count` sleepers.
    void EnqueueBulk(Worker* worker, Task* const* tasks, std::size_t count, Priority priority);
    void WakeUpTo(std::size_t count) noexcept;
    void* TakeBlockSlow(Worker* worker);
    inline void ReturnBlock(void* block, bool toWorker) noexcept;
    // A block from `source` (TaskOptions::allocator), counted and registered as the pools' are.
    void* TakeBlockFrom(IBlockAllocator& source);
    // Gives a block from TakeBlockFrom back to its allocator; may delete this core (last block).
    void FreeBlockTo(void* block) noexcept;
    // Where a task's block goes when it is freed: its allocator, else the pools.
    void ReleaseBlock(void* block, bool toWorker, bool fromAllocator) noexcept
    {
        if (fromAllocator) [[unlikely]]
            FreeBlockTo(block);
        else
            ReturnBlock(block, toWorker);
    }
    // TaskOptions::allocator, else SchedulerOptions::taskAllocator (nullptr: the pools).
    IBlockAllocator* BlockAllocatorFor(const TaskOptions& taskOptions) const noexcept
    {
        return taskOptions.allocator ? taskOptions.allocator : options.taskAllocator;
    }
    void ReturnBlockSlow(FreeTaskBlock* block, Worker* worker) noexcept;
    std::uint64_t FreeBlocks(FreeTaskBlock* block) noexcept; // how many it freed
    // CountStart/CountEnd: `worker`'s own count when it is the calling thread's worker of this
    // core (a load and a store), else the shared one (a read-modify-write).
    inline void CountOn(Worker* worker, std::atomic<std::uint64_t> Worker::*own,
                        std::atomic<std::uint64_t>& elsewhere) noexcept;
    [[gnu::noinline]] bool BindStack(Task* task, Worker* worker) noexcept;
    void EndUnrun(Task* task, Worker* worker) noexcept;
    void Idle(Worker& worker);
    // A stopping worker's sleep while timedCoroutines is not zero: until work is queued, or 1 ms.
    void AwaitDelivery(Worker& worker);
    // TryDequeue's pick by priority alone (inline there, its only caller: SchedulerQueues.cpp),
    // and its case of a task that has just yielded (cold).
    inline std::uintptr_t TakeNext(Worker& worker, Priority lowest) noexcept;
    [[gnu::noinline]] std::uintptr_t PassOverYielded(Worker& worker, Priority lowest,
                                                     std::uintptr_t yielded) noexcept;
    // Shutdown's last look: refuses new work from outside from now on, then waits until every
    // submission admitted before has queued its item.
    void Close() noexcept;
    // Until no submission from outside is in flight (EnterFromOutside to LeaveFromOutside).
    void WaitForOutsideSubmissions() const noexcept;

    SharedQueue global_[kPriorityCount];
    // Critical and High items in global_: counted before the enqueue and after the dequeue, so
    // never below the true count. Its own line: written only when such work crosses the shared
    // queue, read on every switch and pick (a zero skips those queues).
    struct alignas(64) SharedUrgentCount
    {
        std::atomic<std::uint32_t> value{0};
    } sharedUrgent_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<int> sleepers_{0};
    // Own lines: every outside submitter writes enqueuing_ twice, and an idle worker polls
    // exit_ while it spins; sharing one line made each submission steal it from the spinner.
    // enqueuing_: submissions from outside this core's threads in flight, from before their
    // admission until their item is queued (EnterFromOutside/LeaveFromOutside), plus
    // kEnqueueClosed once the destructor closed. Both the count and the flag live in one word
    // so that each submitter decides with a single read-modify-write: every RMW of the word is
    // in one modification order, so a submitter's increment either comes before the close (the
    // destructor then waits for its decrement, and runs what it queued) or after it (it reads
    // the flag and is refused). A flag and a separate count would need a fence pair.
    // ~SchedulerCore waits for the count to drop to zero too: a resume from outside may still be
    // waking a worker for the task that finished last.
    alignas(64) std::atomic<std::uint32_t> enqueuing_{0};
    alignas(64) std::atomic<bool> exit_{false};
    // One Normal-priority item submitted from outside while the shared queue was empty: an idle
    // worker's spin reads this one line instead of the queue's, and takes the item with one
    // compare-exchange (EnqueueShared, TryDequeue). Its own line: submitters write it, workers
    // poll it. The item is in the low kInboxItemBits bits (0: empty); the high bits count the
    // placements (never 0), and an item queued while the inbox was full carries the count of
    // the one it queued behind (FromSharedQueue).
    alignas(64) std::atomic<std::uintptr_t> inbox_{0};
    std::mutex sleepLock_;
    Parker* sleepList_ = nullptr;
    std::atomic<bool> hostClaimed_{false}; // ClaimHost: the one thread that binds hostThread_
    std::atomic<bool> hostBound_{false};
    std::thread::id hostThread_;
    // Every thread whose `host` is this core (guarded by the global host lock, SchedulerRun.cpp):
    // ~Scheduler clears their `host`, so none pumps this core once its Scheduler is gone.
    std::vector<ThreadState*> hostThreads_;
    std::mutex stopLock_;      // Stop: a second caller waits for the first to finish
    bool hostsClosed_ = false; // under the host lock: unbound for good, BindHost refuses
    std::atomic<ThreadState*> hostPumper_{nullptr}; // HostPumpTurn
    // Set by the host thread once a pump of every priority left nothing queued: from then on its
    // submissions outside a pump go to the host worker's own queue (SubmittingWorker). Not before,
    // so that they never overtake what it queued in the shared queue before it first pumped.
    // Written by whoever pumps the host worker (the host thread, or ~Scheduler's drain holding
    // the host pump, HostPumpTurn) and read by the host thread.
    bool hostLocalReady_ = false;
    std::mutex stackLock_;
    std::unordered_map<std::size_t, std::vector<StackMemory>> stackPool_;
    // Under stackLock_: the bytes stackPool_ holds, at most options.stackPoolBytes.
    std::size_t pooledStackBytes_ = 0;
    bool stacksOrphaned_ = false; // under stackLock_: the Scheduler is gone, stacks are freed
    SpinLock blockLock_; // task blocks freed off this core's workers (up to kBlockPoolLimit)
    FreeTaskBlock* blockPool_ = nullptr;
    std::atomic<std::size_t> blockPoolCount_{0}; // written under blockLock_; peeked without it
    bool orphaned_ = false; // under blockLock_: the Scheduler is gone, blocks are freed, not pooled

public:
    // This core and its task blocks in the registry DumpTasks and the debugger read (registered
    // once the constructor has succeeded, until the destructor); workerPointers_ backs its list.
    CoreRecord registry_;
    std::vector<Worker*> workerPointers_;
};


inline void SchedulerCore::CountOn(Worker* worker, std::atomic<std::uint64_t> Worker::*own,
                                   std::atomic<std::uint64_t>& elsewhere) noexcept
{
    if (worker && worker->core == this) [[likely]]
    {
        std::atomic<std::uint64_t>& count = worker->*own; // written by this thread alone
        count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    else
        elsewhere.fetch_add(1, std::memory_order_release);
}

// TakeBlock and ReturnBlock: the fast paths of every start and free, inline here so the task
// code in other files keeps them inlined; TaskMemory.cpp holds their slow paths.
inline void* SchedulerCore::TakeBlock(Worker* worker)
{
    if (worker && worker->blockCache) [[likely]]
    {
        --worker->blockCacheCount;
        FreeTaskBlock* block = std::exchange(worker->blockCache, worker->blockCache->next);
        // The next start writes all of the next block: fetch its lines for writing now, so
        // that a burst of starts does not wait on them one start at a time.
        if (FreeTaskBlock* next = worker->blockCache)
            for (std::size_t offset = 0; offset < kTaskBlockSize; offset += 64)
                __builtin_prefetch(reinterpret_cast<unsigned char*>(next) + offset, 1);
        return block;
    }
    return TakeBlockSlow(worker);
}

inline void SchedulerCore::ReturnBlock(void* memory, bool toWorker) noexcept
{
    auto* block = static_cast<FreeTaskBlock*>(memory);
    Worker* worker = toWorker ? SubmittingWorker() : nullptr;
    if (worker && worker->blockCacheCount < kBlockCacheLimit) [[likely]]
    {
        block->next = worker->blockCache;
        worker->blockCache = block;
        ++worker->blockCacheCount;
        return;
    }
    ReturnBlockSlow(block, worker);
}

inline void SchedulerCore::CountStart(Worker* worker) noexcept
{
    CountOn(worker, &Worker::started, startedElsewhere);
}

inline void SchedulerCore::CountEnd(Worker* worker) noexcept
{
    CountOn(worker, &Worker::ended, endedElsewhere);
}

// Switches the running task away; `action` tells the next context what to do for it. Returns
// when the task runs again (possibly on another thread).
void SwitchAway(Worker& worker, Task* self, PostSwitch action, SchedulerCore* target = nullptr) noexcept;

// What a context does first when it runs again: the action the context before it left.
// `worker` is the switch's message: the worker of the thread this context now runs on.
// A plain suspend, by far the most common action, is handled here without a call of its own:
// with no test kit listening and checked mode off, OnSuspended is called last, as a jump, and
// nothing is stored but the cleared action (the race points and the callback depth are
// RunPostSwitch's, for the other cases). With the assembly switch this runs
// inside the switch (SwitchContextThen), so a suspended task continues straight in the code
// that suspended; elsewhere right after SwitchContext returns. Running it twice is harmless: it
// clears the action it runs.
inline void AfterSwitchIn(Worker& worker) noexcept
{
    if (worker.post == PostSwitch::Suspend && !TC_CHECKED &&
        racePointHook.load(std::memory_order_relaxed) == nullptr) [[likely]]
    {
        Task* task = worker.postTask;
        worker.post = PostSwitch::None;
        task->entry.callback_->OnSuspended(SuspendedTask(&task->entry));
    }
    else if (worker.post != PostSwitch::None)
        worker.core->RunPostSwitch(worker, *worker.threadState);
}

// The task running on this thread, or nullptr.
Task* CurrentTask() noexcept;
} // namespace TC::detail
