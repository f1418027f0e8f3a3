// Scheduler: queues, worker loops, host pumping, task start/finish and the direct task-to-task
// switch. Read-modify-write counts on the hot paths are noted where they happen.

#include "SchedulerCore.h"

#include "Diagnostics.h"
#include "Resume.h"
#include "Sanitizers.h"
#include "Timers.h"

#include <TC/Checked.h>
#include <TC/Suspend.h>
#include <TC/detail/SpinLock.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace TC::detail
{
namespace
{
[[maybe_unused]] constexpr std::uint64_t kStackCanary = 0x5443'5354'4143'4b21ull; // "TCSTACK!"
// A worker keeps up to kStackCacheLimit default-size stacks of its own and trades them with the
// shared pool kStackBatch at a time, so a burst of starts and finishes takes the pool's lock once
// per batch rather than once per task (two locks per task cost a spawn-and-join ~110 instructions).
constexpr std::size_t kStackCacheLimit = 64;
constexpr std::size_t kStackBatch = 32;
// Room the shared pool has for default-size stacks from the start: a task freed outside its
// workers (a Join that drops the last reference after the task ended) returns its stack there,
// and the first such return must not allocate the pool's entry in a steady state.
constexpr std::size_t kStackPoolReserve = 2 * kStackCacheLimit;
constexpr std::int64_t kSpinNanoseconds = 20000; // an idle worker spins about 20 us, then sleeps
// Task blocks go back where they came from: a block a worker's task started with returns to that
// worker's cache (up to kBlockCacheLimit) wherever it is freed last, one started from another
// thread to the scheduler's pool (up to kBlockPoolLimit), so neither kind of starter allocates
// in a steady state; the rest go back to operator delete, so a burst does not pin its memory.
constexpr std::size_t kBlockCacheLimit = 1024;
constexpr std::size_t kBlockPoolLimit = 4096;
constexpr std::size_t kBlockBatch = 32;

std::size_t PageSize() noexcept
{
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

std::size_t RoundUp(std::size_t value, std::size_t to) noexcept
{
    return (value + to - 1) / to * to;
}

// TSan cannot see the queue's fences (SharedQueue.h); these give it the
// happens-before edge the queue really provides, from every enqueue to the dequeues after it.
void TsanRelease([[maybe_unused]] const void* queue) noexcept
{
#if TC_TSAN
    __tsan_release(const_cast<void*>(queue));
#endif
}

void TsanAcquire([[maybe_unused]] const void* queue) noexcept
{
#if TC_TSAN
    __tsan_acquire(const_cast<void*>(queue));
#endif
}

std::size_t PriorityIndex(Priority priority) noexcept
{
    return static_cast<std::size_t>(priority);
}

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

// Out of line: the call's arguments live in this frame, so a caller's own frame holds nothing
// whose address escapes and its last call can be a jump (SwitchAway).
[[gnu::noinline]] void CallTaskHook(const std::function<void(TaskHandle, const char*)>& hook,
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

[[noreturn]] void DetachedTaskFailed(Task* task, const char* how = "ended with an exception") noexcept
{
    const std::string what = DescribeException(task->error);
    std::fprintf(stderr, "TC: detached task '%s' %s: %s\n", task->name, how, what.c_str());
    std::fflush(stderr);
    std::terminate();
}

void CheckCanary(const Task* task) noexcept
{
#if TC_CHECKED
    if (task->stack.guard == StackGuard::None)
    {
        std::uint64_t canary;
        std::memcpy(&canary, task->stack.base, sizeof canary);
        TC_CHECK(canary == kStackCanary, "stack overflow",
                 "a task without a guard page overwrote the bottom of its stack; give it a larger "
                 "TaskOptions::stackSize");
    }
#else
    (void)task;
#endif
}

// The lowest address a task's frames may use: above the guard page, if the stack has one.
unsigned char* UsableBottom(const StackMemory& stack) noexcept
{
    return static_cast<unsigned char*>(stack.base) + (stack.guard == StackGuard::Page ? PageSize() : 0);
}

// A pooled stack keeps the redzones of the frames its last task never unwound (ASan builds).
void ClearOldRedzones([[maybe_unused]] const StackMemory& stack) noexcept
{
#if TC_ASAN
    unsigned char* usable = UsableBottom(stack);
    ASAN_UNPOISON_MEMORY_REGION(usable, static_cast<std::size_t>(
                                            static_cast<unsigned char*>(stack.base) + stack.size - usable));
#endif
}

// The end of a task as its JoinHandle sees it, whether the callable ran or not, once nothing
// uses the task's block any more (its callable destroyed, its stack and context given up): the
// join word says finished and a waiting joiner is resumed. The join word also decides who frees
// the block: from this exchange on the handle does -- unless it let go before (detached), and
// then this does, first ending the process, saying how (`detachedFailure`), if the task failed.
// acq_rel: the task's writes (its error) reach the handle; a Detach's reach us.
void EndForJoiner(Task* task, const char* detachedFailure) noexcept
{
    const std::uintptr_t previous = task->join.exchange(kJoinFinished, std::memory_order_acq_rel);
    if (previous == kJoinDetached)
    {
        if (task->error)
            DetachedTaskFailed(task, detachedFailure);
        task->scheduler->FreeTask(task);
    }
    else if (previous != kJoinRunning)
        ResumeTask(SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(previous))); // it frees
}

#if TC_SWITCH_RUNS_THEN
// The step every kernel switch runs on the other side, inside the switch (SwitchContextThen).
void AfterSwitchInStep(void* worker) noexcept
{
    AfterSwitchIn(*static_cast<Worker*>(worker));
}
#endif

// Every kernel switch: from `from` to `to`, handing over `worker` (the thread's). When this
// context runs again it first does what the context it came from asked (AfterSwitchIn): inside
// the switch with the assembly backend, so that a caller whose last call this is continues
// straight in its own caller; after the switch returns elsewhere. Returns the worker of the
// thread this context then runs on. `fromFinished`: `from` never runs again.
[[gnu::always_inline]] inline Worker& SwitchTo(ExecutionContext& from, ExecutionContext& to,
                                               Worker* worker, bool fromFinished = false) noexcept
{
#if TC_SWITCH_RUNS_THEN
    (void)fromFinished; // only the sanitizers' annotated switch uses it
    return *static_cast<Worker*>(SwitchContextThen(from, to, worker, &AfterSwitchInStep));
#else
    Worker& arrivedOn = *static_cast<Worker*>(SwitchContext(from, to, worker, fromFinished));
    AfterSwitchIn(arrivedOn);
    return arrivedOn;
#endif
}

[[noreturn]] void TaskMain(void* argument, void* message)
{
    OnContextStarted();
    auto* task = static_cast<Task*>(argument);
    auto* worker = static_cast<Worker*>(message); // the worker this context first runs on
#if !TC_SWITCH_RUNS_THEN
    AfterSwitchIn(*worker); // the assembly switch ran it already
#endif
    for (;;)
    {
        // Every task starts with its worker's floating-point control state, also one that
        // starts in place on the stack of a task that changed its own and ended.
        LoadFloatingPointControl(worker->taskStartControl);
        try
        {
            task->body->invoke(task->callable);
        }
        catch (...)
        {
            task->error = std::current_exception();
        }
        task->body->destroy(task->callable);
        // The next task of this worker that has never run starts right here, on this stack:
        // no stack to take or give back, no context to make, no switch. (The task may have
        // moved to another worker since it started.)
        worker = CurrentThread().worker;
        Task* next = worker->core->StartOnFinishedStack(*worker, task);
        if (!next)
            break;
        task = next;
    }
    SwitchAway(*worker, task, PostSwitch::Finish);
    __builtin_unreachable();
}
} // namespace

constinit thread_local ThreadState threadState;

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
    const HostPumpTurn turn(*this, thread);
    if (turn.Busy())
        return false; // ~Scheduler drains it on another thread
    return Pump(64, Priority::Normal, 0, false).ran != 0;
}

ThreadState& CurrentThread() noexcept
{
    ThreadState& state = threadState;
    // The address passes through an empty asm, so no compiler can see what this returns: clang
    // before 16 treats a thread_local's address as constant within a function, and would
    // otherwise substitute it for the call's result in callers in this file, computing one
    // thread's address before a switch and reusing it after the task moved to another thread
    // (TaskMain crashed that way). The memory clobber keeps the call from being treated as pure.
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
// Construction and shutdown

SchedulerCore::SchedulerCore(Scheduler* owner_, SchedulerOptions options_)
    : owner(owner_), options(std::move(options_)),
      allocator(options.stackAllocator ? options.stackAllocator : &DefaultStackAllocator()),
      defaultStackSize(RoundUp(options.stackSize < 4 * PageSize() ? 4 * PageSize() : options.stackSize,
                               PageSize())),
      taskHooks(static_cast<bool>(options.hooks.taskEnter) || static_cast<bool>(options.hooks.taskLeave))
{
    stackPool_[defaultStackSize].reserve(kStackPoolReserve);
    const unsigned count = options.workerCount ? options.workerCount : 1;
    for (unsigned i = 0; i < count; ++i)
    {
        auto worker = std::make_unique<Worker>();
        worker->core = this;
        worker->index = i;
        worker->parker.word = &worker->word;
        // A host pump returns to its loop after every task so it can check its budget.
        worker->directSwitch = options.workerCount > 0;
        worker->stackCache.reserve(kStackCacheLimit);
        for (LocalQueue& queue : worker->local)
            queue.Reserve(1024);
        if (options.workerCount == 0)
            worker->shuffleState = options.shuffleSeed;
        workers_.push_back(std::move(worker));
    }
    if (options.workerCount > 0)
    {
        try
        {
            for (auto& worker : workers_)
                worker->thread = std::thread([this, w = worker.get()] { WorkerMain(*w); });
        }
        catch (...)
        {
            exit_.store(true, std::memory_order_release);
            WakeAll();
            for (auto& worker : workers_)
                if (worker->thread.joinable())
                    worker->thread.join();
            throw;
        }
    }
}

SchedulerCore::~SchedulerCore()
{
    // A submitter from outside may still be waking a worker for the task that finished last.
    WaitForOutsideSubmissions();
    for (auto& worker : workers_)
        for (StackMemory& stack : worker->stackCache)
            stack.allocator->Deallocate(stack.base, stack.size, stack.guard);
    for (auto& [size, stacks] : stackPool_)
        for (StackMemory& stack : stacks)
            stack.allocator->Deallocate(stack.base, stack.size, stack.guard);
    // Every block was freed before the count that deletes this core reached zero (Orphan);
    // these are empty unless the constructor failed.
    for (auto& worker : workers_)
        FreeBlocks(worker->blockCache);
    FreeBlocks(blockPool_);
}

void SchedulerCore::Stop(const char* call)
{
    ThreadState& thread = CurrentThread();
    if (thread.worker && thread.worker->core == this)
        throw std::logic_error("TC::Scheduler('" + options.name + "'): " + call +
                               " called from the scheduler's own task or pump; it would wait for "
                               "itself to finish");
    std::lock_guard lock(stopLock_);
    if (stopped.load(std::memory_order_relaxed))
        return;
    Shutdown();
    // Every thread that pumped it (the host, and this one if Shutdown pumped here) forgets it:
    // a wait of theirs must not pump a core whose Scheduler is gone, even if handles keep it.
    UnbindHostThreads();
    stopped.store(true, std::memory_order_release);
}

void SchedulerCore::Shutdown()
{
    stopping.store(true, std::memory_order_release);
    shutdownRequested.store(true, std::memory_order_release);
    const auto start = std::chrono::steady_clock::now();
    bool reported = false;
    auto reportIfHung = [&] {
        if (!reported && std::chrono::steady_clock::now() - start > std::chrono::seconds(5))
        {
            reported = true;
            std::fprintf(stderr,
                         "TC: ~Scheduler('%s') has waited 5 s for %zu task(s) that are suspended and "
                         "were never resumed; it keeps waiting (resume or finish every task before "
                         "destroying its scheduler)\n",
                         options.name.c_str(), Live());
        }
    };
    // The first look's bound: the shared queue counts as drained once it ran empty, or once as
    // many items were taken from it as it held when Stop began. A thread that keeps submitting
    // faster than the work runs then delays the last look by that backlog, not for ever; what it
    // queues meanwhile runs in the second drain.
    const std::uint64_t takenAtStart = TakenShared();
    const std::size_t backlogAtStart = QueuedApprox(nullptr, Priority::Normal);
    auto sharedDrained = [&](bool bounded)
    {
        return !HasQueuedWork(Priority::Normal) ||
               (bounded && TakenShared() - takenAtStart >= backlogAtStart);
    };
    // Until no task lives and the shared queue is drained (bounded: see above; else empty): the
    // workers run it, or this thread pumps.
    auto drain = [&](bool bounded)
    {
        if (HasWorkerThreads())
        {
            while (Live() != 0 || !sharedDrained(bounded))
            {
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                reportIfHung();
            }
            return;
        }
        ThreadState& thread = CurrentThread();
        for (;;)
        {
            // The host may be pumping it from a wait on its own thread: the drain takes turns
            // with it, and decides only while it holds the pump, when no item can be in flight
            // between the host worker's queue and a pump. The turn ends before it sleeps.
            {
                const HostPumpTurn turn(*this, thread);
                if (turn.Busy())
                {
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                    reportIfHung();
                    continue;
                }
                // Bounded, a pump runs only what was queued when it began, or a steady
                // submitter would keep it running.
                Pump(SIZE_MAX, Priority::Normal, 0, bounded);
                if (Live() == 0 && HostWorker().local[0].IsEmpty() &&
                    HostWorker().local[1].IsEmpty() && sharedDrained(bounded))
                    break;
            }
            Parker parker{&HostWorker().word};
            RegisterSleeper(parker);
            StoreLoadBarrier();
            if (!HasQueuedWork(Priority::Normal))
                SleepOnWord(HostWorker().word, kWordWork, Duration(std::chrono::milliseconds(100)));
            UnregisterSleeper(parker);
            reportIfHung();
        }
    };
    if (!HasWorkerThreads())
        CheckHostThread(true);
    // Until the last task finished, everything is accepted (but Start): what the tasks and
    // the other threads submit meanwhile runs here.
    drain(true);
    // The last look: from now on new work from outside is refused, and what was admitted before
    // is queued once Close returns. The second drain runs it; what that work submits from this
    // core's own threads is still accepted (the workers and this pump run it before they stop).
    Close();
    drain(false);
    if (HasWorkerThreads())
    {
        // A worker leaves its loop only once it found nothing to take, so what the last items
        // submitted from a worker runs before the join returns.
        exit_.store(true, std::memory_order_release);
        WakeAll();
        for (auto& worker : workers_)
            worker->thread.join();
    }
}

void SchedulerCore::Close() noexcept
{
    // relaxed: the submitters decide on this same word (EnterFromOutside), so its modification
    // order alone says which increments came first; the acquire loads below order their enqueues
    // before the drain that follows.
    enqueuing_.fetch_or(kEnqueueClosed, std::memory_order_relaxed);
    WaitForOutsideSubmissions();
}

void SchedulerCore::WaitForOutsideSubmissions() const noexcept
{
    // acquire: pairs with LeaveFromOutside's release, so each submitter's enqueue is visible.
    while ((enqueuing_.load(std::memory_order_acquire) & ~kEnqueueClosed) != 0)
        std::this_thread::yield();
}

void SchedulerCore::EnterFromOutside(Arrival arrival, const char* call)
{
    // relaxed: the decision rests on this RMW's place in enqueuing_'s modification order alone
    // (see there); the enqueue is ordered before the destructor's drain by LeaveFromOutside.
    const std::uint32_t before = enqueuing_.fetch_add(1, std::memory_order_relaxed);
    if (!(before & kEnqueueClosed) || arrival == Arrival::Resume) [[likely]]
        return;
    // Refused: the message is made while the count still holds the core, which may be freed the
    // moment the count is left -- and the count is left even if making it throws, or the
    // destructor would wait for it for ever.
    std::string message;
    try
    {
        message = "TC::Scheduler('" + options.name + "'): " + call +
                  " refused: the scheduler is stopping or stopped (Stop or ~Scheduler)";
    }
    catch (...)
    {
        LeaveFromOutside();
        throw std::logic_error("TC::Scheduler: refused: the scheduler is stopping or stopped");
    }
    LeaveFromOutside();
    throw std::logic_error(message); // reads only the local copy, after the count is left
}

void SchedulerCore::CheckHostThread(bool forDestructor)
{
    if (HasWorkerThreads())
        throw std::logic_error("TC::Scheduler('" + options.name
                               + "') has worker threads; only a scheduler without workers is pumped");
    const auto self = std::this_thread::get_id();
    if (!hostBound_.load(std::memory_order_acquire))
    {
        hostThread_ = self;
        hostBound_.store(true, std::memory_order_release);
        return;
    }
    if (hostThread_ != self && !forDestructor)
        throw std::logic_error("TC::Scheduler('" + options.name
                               + "') is pumped by its host thread only (the first thread that "
                                 "pumped it)");
}

// ---------------------------------------------------------------------------------------------
// Queues

void SchedulerCore::EnqueueFromOutside(std::uintptr_t item, Priority priority, Arrival arrival)
{
    if (Worker* host = HostWorkerOfThisThread()) // never while the destructor runs
    {
        host->local[static_cast<std::size_t>(priority)].Push(item);
        return;
    }
    // Counted from before the admission until the item is queued and a worker woken: the
    // destructor's last look waits for an admitted item to be queued, and once it is queued its
    // task may run and finish, and the scheduler be destroyed, while this call (from the timer
    // thread or any other) is still waking a worker -- ~SchedulerCore waits for it as well.
    EnterFromOutside(arrival, "Submit");
    LeaveFromOutsideAtExit leave{this};
    EnqueueShared(item, priority);
}

void SchedulerCore::EnqueueShared(std::uintptr_t item, Priority priority)
{
    TC_CHECK((item & ~kInboxItemMask) == 0, "address above 48 bits",
             "a task or coroutine frame lives above the 48-bit address range the scheduler's "
             "queues assume");
    // The inbox when it is free and the queue looks empty: that this thread sees the queue empty
    // means everything it queued before was taken. Workers look at the inbox before the queue,
    // and an item queued while the inbox is full carries the inbox's placement count, so a
    // worker that looked at the inbox just before it filled and then took the later item from
    // the queue runs the inbox's first (FromSharedQueue): one thread's submissions start in the
    // order made (on one worker; with several, two may be taken at once). Host-pumped
    // schedulers keep to the queue (their seeded shuffle).
    std::uintptr_t behind = 0; // the placement count of the inbox item this one queues behind
    if (priority == Priority::Normal && HasWorkerThreads())
    {
        std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
        if ((word & kInboxItemMask) == 0
            && global_[PriorityIndex(Priority::Normal)].size_approx() == 0)
        {
            std::uintptr_t count = (word >> kInboxItemBits) + 1;
            if (count >> (64 - kInboxItemBits))
                count = 1; // wrapped: 0 means "not behind anything"
            // acq_rel: the item's writes happen before the taker's CAS (acquire); an RMW, so
            // WakeOne's barrier orders it before the sleeper check as it does an enqueue.
            if (inbox_.compare_exchange_strong(word, (count << kInboxItemBits) | item,
                                               std::memory_order_acq_rel, std::memory_order_relaxed))
            {
                WakeOne();
                return;
            }
        }
        if ((word & kInboxItemMask) != 0)
            behind = word & ~kInboxItemMask;
    }
    auto& queue = global_[PriorityIndex(priority)];
    const bool high = priority == Priority::High;
    if (high)
        sharedHigh_.value.fetch_add(1, std::memory_order_relaxed); // before: never below the truth
    TsanRelease(&queue);
    if (!queue.enqueue(item | behind))
    {
        if (high)
            sharedHigh_.value.fetch_sub(1, std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    WakeOne();
}

std::uintptr_t SchedulerCore::TakenFromShared(Worker& worker, std::size_t priority,
                                              std::uintptr_t item) noexcept
{
    TsanAcquire(&global_[priority]);
    CountTakenShared(worker);
    if (priority == PriorityIndex(Priority::High))
        sharedHigh_.value.fetch_sub(1, std::memory_order_relaxed);
    return item;
}

std::uintptr_t SchedulerCore::FromSharedQueue(Worker& worker, std::uintptr_t queued) noexcept
{
    const std::uintptr_t item = queued & kInboxItemMask;
    const std::uintptr_t behind = queued & ~kInboxItemMask;
    if (behind == 0)
        return item;
    std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
    // Only the very placement it queued behind, still unclaimed: a later one (another count) is
    // newer than `item` and waits its turn.
    if ((word & ~kInboxItemMask) != behind || (word & kInboxItemMask) == 0 || worker.deferred != 0)
        return item;
    if (!inbox_.compare_exchange_strong(word, behind, std::memory_order_acquire,
                                        std::memory_order_relaxed))
        return item; // another worker took it
    CountTakenShared(worker);
    worker.deferred = item;
    return word & kInboxItemMask;
}

std::uintptr_t SchedulerCore::TryDequeue(Worker& worker, Priority lowest) noexcept
{
    const std::size_t last = PriorityIndex(lowest);
    if (worker.shuffleState != 0)
    {
        // Seeded pumping: gather everything ready, then take a pseudo-random one (xorshift64).
        for (std::size_t p = 0; p <= last; ++p)
        {
            std::uintptr_t item = 0;
            while (global_[p].try_dequeue(item))
            {
                item = TakenFromShared(worker, p, item) &
                       kInboxItemMask; // never behind the inbox here
                try
                {
                    worker.local[p].Push(item);
                }
                catch (...)
                {
                    return item; // no room to shuffle: run it now
                }
            }
            if (const std::size_t size = worker.local[p].Size())
            {
                std::uint64_t x = worker.shuffleState;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                worker.shuffleState = x;
                worker.local[p].SwapToFront(static_cast<std::size_t>(x % size));
                return worker.local[p].Pop();
            }
        }
        return 0;
    }
    if (worker.deferred != 0)
        return std::exchange(worker.deferred, 0); // next after the inbox item it queued behind
    const bool globalFirst = --worker.fairnessCountdown == 0 || worker.preferShared;
    if (globalFirst)
    {
        worker.fairnessCountdown = kFairnessInterval;
        worker.preferShared = false;
    }
    std::uintptr_t item = 0;
    for (std::size_t p = 0; p <= last; ++p)
    {
        // The inbox holds a Normal item that came before everything its submitter queued since.
        if (p == PriorityIndex(Priority::Normal))
        {
            // Claimed with a compare-exchange that keeps the placement count.
            std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
            while ((word & kInboxItemMask) != 0)
                if (inbox_.compare_exchange_weak(word, word & ~kInboxItemMask,
                                                 std::memory_order_acquire, std::memory_order_relaxed))
                {
                    CountTakenShared(worker);
                    return word & kInboxItemMask;
                }
        }
        if (globalFirst && global_[p].try_dequeue(item))
            return FromSharedQueue(worker, TakenFromShared(worker, p, item));
        if ((item = worker.local[p].Pop()) != 0)
            return item;
        if (global_[p].try_dequeue(item))
            return FromSharedQueue(worker, TakenFromShared(worker, p, item));
    }
    return 0;
}

bool SchedulerCore::HasQueuedWork(Priority lowest) const noexcept
{
    if (lowest == Priority::Normal && (inbox_.load(std::memory_order_relaxed) & kInboxItemMask) != 0)
        return true;
    for (std::size_t p = 0; p <= PriorityIndex(lowest); ++p)
        if (global_[p].size_approx() != 0)
            return true;
    return false;
}

std::size_t SchedulerCore::QueuedApprox(const Worker* worker, Priority lowest) const noexcept
{
    std::size_t count
        = lowest == Priority::Normal && (inbox_.load(std::memory_order_relaxed) & kInboxItemMask) != 0;
    for (std::size_t p = 0; p <= PriorityIndex(lowest); ++p)
    {
        count += global_[p].size_approx();
        if (worker)
            count += worker->local[p].Size();
    }
    return count;
}

// ---------------------------------------------------------------------------------------------
// Sleeping: a sleeper registers, fences, re-checks the queues, then sleeps; a submitter
// enqueues, fences, then reads the sleeper count. One of the two always sees the other.

void SchedulerCore::RegisterSleeper(Parker& parker)
{
    std::lock_guard lock(sleepLock_);
    parker.next = sleepList_;
    sleepList_ = &parker;
    parker.listed = true;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
}

void SchedulerCore::UnregisterSleeper(Parker& parker) noexcept
{
    std::lock_guard lock(sleepLock_);
    if (!parker.listed)
        return;
    for (Parker** link = &sleepList_; *link; link = &(*link)->next)
        if (*link == &parker)
        {
            *link = parker.next;
            break;
        }
    parker.listed = false;
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void SchedulerCore::StoreLoadBarrier() noexcept
{
#if TC_TSAN
    // ThreadSanitizer does not model fences (GCC refuses them); a read-modify-write on the
    // sleeper count orders the same two sides: both RMWs are in one modification order, so the
    // later one synchronizes with the earlier.
    sleepers_.fetch_add(0, std::memory_order_acq_rel);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

void SchedulerCore::WakeOne() noexcept
{
    StoreLoadBarrier();
    if (sleepers_.load(std::memory_order_relaxed) == 0)
        return;
    // Woken under the lock: the sleeper unregisters under it too, so its parker (which may live
    // on its stack) cannot go away while we touch it.
    std::lock_guard lock(sleepLock_);
    if (Parker* parker = sleepList_)
    {
        sleepList_ = parker->next;
        parker->listed = false;
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        parker->Wake();
    }
}

void SchedulerCore::WakeAll() noexcept
{
    std::lock_guard lock(sleepLock_);
    while (Parker* parker = sleepList_)
    {
        sleepList_ = parker->next;
        parker->listed = false;
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        parker->Wake();
    }
}

void SchedulerCore::Idle(Worker& worker)
{
    const IdlePolicy policy = options.idlePolicy;
    if (policy != IdlePolicy::Sleep)
    {
        // Bounded by time, not by a count: a pause instruction lasts from 10 to 150 cycles
        // depending on the processor. The clock is first read after 32 pauses, not on entry, so
        // work that arrives at once (a worker between two posts) is taken without that read.
        std::int64_t until = 0;
        for (unsigned i = 1;; ++i)
        {
            if (HasQueuedWork(Priority::Normal) || exit_.load(std::memory_order_relaxed))
                return;
            if (policy == IdlePolicy::Yield)
                std::this_thread::yield();
            else
                CpuRelax();
            if (policy == IdlePolicy::SpinThenSleep && i % 32 == 0)
            {
                const std::int64_t now = SteadyNowNanoseconds();
                if (until == 0)
                    until = now + kSpinNanoseconds;
                else if (now >= until)
                    break;
            }
        }
    }
    RegisterSleeper(worker.parker);
    StoreLoadBarrier();
    if (!HasQueuedWork(Priority::Normal) && !exit_.load(std::memory_order_acquire))
        SleepOnWord(worker.word, kWordWork);
    UnregisterSleeper(worker.parker);
}

// ---------------------------------------------------------------------------------------------
// Running

void SchedulerCore::RunItem(Worker& worker, std::uintptr_t item)
{
    if (item & kCoroutineTag)
    {
        std::coroutine_handle<>::from_address(reinterpret_cast<void*>(item & ~kCoroutineTag)).resume();
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
                worker.local[PriorityIndex(task->priority)].Push(reinterpret_cast<std::uintptr_t>(task));
                worker.preferShared = true;
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
    InitThreadContext(worker.context);
    CallThreadHook(options.hooks.threadStart, "threadStart", options.name, worker.index);
    worker.taskStartControl = ReadFloatingPointControl(); // as the hook may have set it
    {
        ExecutorScope scope(owner); // one scope for the worker's life, not one per resumption
        for (;;)
        {
            if (std::uintptr_t item = TryDequeue(worker, Priority::Normal))
            {
                RunItem(worker, item);
                continue;
            }
            if (exit_.load(std::memory_order_acquire))
                break;
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
        thread.pumpSerial = pumpingThreads.fetch_add(1, std::memory_order_relaxed) + 1;
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
            worker.taskStartControl = ReadFloatingPointControl();
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

// ---------------------------------------------------------------------------------------------
// Stacks and tasks

StackMemory SchedulerCore::TakeStack(std::size_t size, Worker* worker)
{
    if (size == defaultStackSize && worker && worker->core == this)
    {
        std::vector<StackMemory>& cache = worker->stackCache;
        if (cache.empty())
        {
            // Refill a batch from the pool (the cache's capacity was reserved: no allocation).
            std::lock_guard lock(stackLock_);
            auto found = stackPool_.find(size);
            if (found != stackPool_.end())
            {
                std::vector<StackMemory>& pooled = found->second;
                const std::size_t count = std::min(pooled.size(), kStackBatch);
                cache.insert(cache.end(), pooled.end() - static_cast<std::ptrdiff_t>(count), pooled.end());
                pooled.resize(pooled.size() - count);
                pooledStackBytes_ -= count * size;
            }
        }
        if (!cache.empty())
        {
            StackMemory stack = cache.back();
            cache.pop_back();
            return stack;
        }
    }
    {
        std::lock_guard lock(stackLock_);
        auto found = stackPool_.find(size);
        if (found != stackPool_.end() && !found->second.empty())
        {
            StackMemory stack = found->second.back();
            found->second.pop_back();
            pooledStackBytes_ -= size;
            return stack;
        }
    }
    StackMemory stack;
    stack.size = size;
    stack.guard = options.stackGuard;
    stack.allocator = allocator;
    stack.base = allocator->Allocate(size, options.stackGuard);
    return stack;
}

void SchedulerCore::ReturnStack(StackMemory stack, Worker* worker) noexcept
{
    // A stack a task brought from another scheduler (MoveCurrentTaskTo) made by another allocator
    // or with another guard goes back to its allocator now: pooled here it would serve our tasks
    // without the guard we promise, and be freed by our destructor, which that allocator need not
    // outlive (it must outlive the tasks started with it: SchedulerOptions). One more compare.
    if (!MadeHere(stack)) [[unlikely]]
    {
        stack.allocator->Deallocate(stack.base, stack.size, stack.guard);
        return;
    }
    if (stack.size == defaultStackSize && worker && worker->core == this)
    {
        std::vector<StackMemory>& cache = worker->stackCache;
        if (cache.size() == kStackCacheLimit)
        {
            // Full: hand the oldest batch to the pool under one lock, where other workers find
            // it -- as much of it as the pool's budget takes; the rest is freed after the lock.
            std::size_t kept = 0;
            try
            {
                std::lock_guard lock(stackLock_);
                kept = std::min(kStackBatch, StackPoolRoom(stack.size));
                std::vector<StackMemory>& pooled = stackPool_[stack.size];
                pooled.insert(pooled.end(), cache.begin(),
                              cache.begin() + static_cast<std::ptrdiff_t>(kept));
                pooledStackBytes_ += kept * stack.size;
            }
            catch (...)
            {
                kept = 0; // the pool could not grow: the whole batch is freed
            }
            for (std::size_t i = kept; i < kStackBatch; ++i)
                cache[i].allocator->Deallocate(cache[i].base, cache[i].size, cache[i].guard);
            cache.erase(cache.begin(), cache.begin() + kStackBatch);
        }
        cache.push_back(stack); // the capacity was reserved up front: never allocates
        return;
    }
    try
    {
        std::lock_guard lock(stackLock_);
        if (StackPoolRoom(stack.size) > 0)
        {
            stackPool_[stack.size].push_back(stack);
            pooledStackBytes_ += stack.size;
            return;
        }
    }
    catch (...)
    {
        // The pool could not grow: freed below.
    }
    stack.allocator->Deallocate(stack.base, stack.size, stack.guard);
}

std::size_t SchedulerCore::StackPoolRoom(std::size_t size) const noexcept
{
    const std::size_t budget = options.stackPoolBytes;
    return pooledStackBytes_ >= budget ? 0 : (budget - pooledStackBytes_) / size;
}

std::size_t SchedulerCore::TrimStackPool() noexcept
{
    // A batch at a time out of the lock: the allocator's Deallocate (munmap) runs unlocked, and
    // the pool's vectors keep their capacity, so the next release allocates nothing. At most
    // what the pool held at the first look: stacks released meanwhile do not keep it going.
    std::size_t freed = 0; // counted as the stacks are taken out, each freed right after
    std::size_t limit = SIZE_MAX;
    for (;;)
    {
        std::array<StackMemory, kStackBatch> batch;
        std::size_t count = 0;
        {
            std::lock_guard lock(stackLock_);
            if (limit == SIZE_MAX)
                limit = pooledStackBytes_;
            for (auto& [size, stacks] : stackPool_)
                while (count < batch.size() && freed < limit && !stacks.empty())
                {
                    batch[count++] = stacks.back();
                    stacks.pop_back();
                    pooledStackBytes_ -= size;
                    freed += size;
                }
        }
        if (count == 0)
            return freed;
        for (std::size_t i = 0; i < count; ++i)
            batch[i].allocator->Deallocate(batch[i].base, batch[i].size, batch[i].guard);
    }
}

void* SchedulerCore::TakeBlock(Worker* worker)
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

void* SchedulerCore::TakeBlockSlow(Worker* worker)
{
    if (blockPoolCount_.load(std::memory_order_relaxed) != 0) // a peek; the lock decides
    {
        std::lock_guard lock(blockLock_);
        if (FreeTaskBlock* block = blockPool_)
        {
            // A worker takes a batch, so blocks that flow from one worker to another (tasks
            // started on one, freed on the other) cost one lock per batch, not per task.
            std::size_t taken = 1;
            FreeTaskBlock* last = block;
            if (worker)
                for (; taken < kBlockBatch && last->next; ++taken)
                    last = last->next;
            blockPool_ = last->next;
            blockPoolCount_.store(blockPoolCount_.load(std::memory_order_relaxed) - taken,
                                  std::memory_order_relaxed);
            last->next = nullptr;
            if (worker && taken > 1)
            {
                worker->blockCache = block->next;
                worker->blockCacheCount = taken - 1;
            }
            return block;
        }
    }
    void* block = ::operator new(kTaskBlockSize, std::align_val_t(kTaskBlockAlign));
    blocks.fetch_add(1, std::memory_order_relaxed); // this core cannot go: its Scheduler counts
    return block;
}

void SchedulerCore::ReturnBlock(void* memory, bool toWorker) noexcept
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

void SchedulerCore::ReturnBlockSlow(FreeTaskBlock* block, Worker* worker) noexcept
{
    // A full worker cache hands the pool a batch along with this block (one lock per batch).
    FreeTaskBlock* first = block;
    FreeTaskBlock* last = block;
    std::size_t count = 1;
    if (worker)
    {
        last->next = worker->blockCache;
        for (; count < kBlockBatch && last->next; ++count)
            last = last->next;
        worker->blockCache = last->next;
        worker->blockCacheCount -= count - 1;
    }
    {
        std::lock_guard lock(blockLock_);
        const std::size_t pooled = blockPoolCount_.load(std::memory_order_relaxed);
        if (!orphaned_ && pooled + count <= kBlockPoolLimit)
        {
            last->next = blockPool_;
            blockPool_ = first;
            blockPoolCount_.store(pooled + count, std::memory_order_relaxed);
            return;
        }
    }
    // Past the pool's limit, or the Scheduler is gone: freed, and the last block frees the core.
    last->next = nullptr;
    if (DropBlocks(FreeBlocks(first)))
        delete this;
}

std::uint64_t SchedulerCore::FreeBlocks(FreeTaskBlock* block) noexcept
{
    std::uint64_t count = 0;
    for (; block; ++count)
        ::operator delete(std::exchange(block, block->next), std::align_val_t(kTaskBlockAlign));
    return count;
}

bool SchedulerCore::Orphan() noexcept
{
    // After Shutdown: no worker runs any more, so their caches are ours to empty; a JoinHandle
    // released from now on frees its block (ReturnBlockSlow) instead of pooling it.
    FreeTaskBlock* pooled = nullptr;
    {
        std::lock_guard lock(blockLock_);
        orphaned_ = true;
        pooled = std::exchange(blockPool_, nullptr);
        blockPoolCount_.store(0, std::memory_order_relaxed);
    }
    std::uint64_t freed = FreeBlocks(pooled);
    for (auto& worker : workers_)
    {
        freed += FreeBlocks(std::exchange(worker->blockCache, nullptr));
        worker->blockCacheCount = 0;
    }
    return DropBlocks(freed + 1); // and the Scheduler's own count
}

Task* SchedulerCore::AllocateTask(const TaskOptions& taskOptions, const TaskBody& body, void*& slot)
{
    if (stopping.load(std::memory_order_acquire))
        throw std::logic_error("TC::Scheduler('" + options.name +
                               "'): Start refused: the scheduler is stopping or stopped (Stop or "
                               "~Scheduler)");
    const std::size_t size
        = taskOptions.stackSize ? RoundUp(std::max(taskOptions.stackSize, 4 * PageSize()), PageSize())
                                : defaultStackSize;
    Worker* worker = SubmittingWorker(); // nullptr: use this core's shared pool
    const bool fromWorker = worker != nullptr;
    void* block = TakeBlock(worker);
    auto* task = ::new (block) Task;
    task->blockFromWorker = fromWorker;
    task->stack.size = size;
    if (body.size <= kTaskBlockSize - kTaskBytes && body.alignment <= kTaskBlockAlign)
    {
        // The usual case: the callable rides in the block, and the stack waits for the first run.
        task->callable = static_cast<unsigned char*>(block) + kTaskBytes;
    }
    else
    {
        // A large callable lives at the top of a stack taken now.
        StackMemory stack;
        try
        {
            stack = TakeStack(size, worker);
        }
        catch (...)
        {
            task->~Task();
            ReturnBlock(block, fromWorker);
            throw;
        }
        ClearOldRedzones(stack); // before the callable is constructed there
        unsigned char* top = static_cast<unsigned char*>(stack.base) + stack.size;
        auto callable = (reinterpret_cast<std::uintptr_t>(top) - body.size) & ~(body.alignment - 1);
        if (callable < reinterpret_cast<std::uintptr_t>(UsableBottom(stack)) + 2 * PageSize())
        {
            task->~Task();
            ReturnBlock(block, fromWorker);
            ReturnStack(stack, worker);
            throw std::length_error("TC::Scheduler::Start: the callable does not fit on the task's stack");
        }
        task->stack = stack;
        task->callable = reinterpret_cast<void*>(callable);
    }
    task->scheduler = this;
    task->body = &body;
    task->name = taskOptions.name ? taskOptions.name : "task";
    task->priority = taskOptions.priority;
    task->entry.kind_ = WaiterKind::Task;
    task->entry.owner_ = task;
    slot = task->callable; // counted by Launch, once the callable is in place
    return task;
}

bool SchedulerCore::BindStack(Task* task, Worker* worker) noexcept
{
    const bool callableOnStack = task->stack.base != nullptr;
    if (!callableOnStack)
    {
        try
        {
            task->stack = TakeStack(task->stack.size, worker);
        }
        catch (...)
        {
            task->error = std::current_exception();
            EndUnrun(task, worker);
            return false;
        }
        ClearOldRedzones(task->stack); // a stack taken at Start was cleared then
    }
    const StackMemory& stack = task->stack;
    auto* base = static_cast<unsigned char*>(stack.base);
    unsigned char* usable = UsableBottom(stack);
    // The first frame goes below the callable when the callable lives on the stack.
    unsigned char* top = callableOnStack
                             ? reinterpret_cast<unsigned char*>(
                                   reinterpret_cast<std::uintptr_t>(task->callable) & ~std::uintptr_t{15})
                             : base + stack.size;
#if TC_CHECKED
    // Checked builds only: writing it touches the stack's lowest page.
    if (stack.guard == StackGuard::None)
        std::memcpy(base, &kStackCanary, sizeof kStackCanary);
#endif
    MakeContext(task->context, usable, static_cast<std::size_t>(top - usable), top, &TaskMain, task);
    task->contextReady = true;
    return true;
}

void SchedulerCore::EndUnrun(Task* task, Worker* worker) noexcept
{
    // As the end of TaskMain and FinishTask, for a task that never ran (task->error is set).
    task->body->destroy(task->callable);
    CountEnd(worker);
    EndForJoiner(task, "could not run: no stack could be allocated for it");
}

void SchedulerCore::FreeUnstartedTask(Task* task) noexcept
{
    if (task->stack.base)
        ReturnStack(task->stack, SubmittingWorker());
    const bool toWorker = task->blockFromWorker;
    task->~Task();
    ReturnBlock(task, toWorker);
}

void SchedulerCore::Launch(Task* task)
{
    Worker* worker = SubmittingWorker();
    if (!worker)
    {
        // From outside: counted from before the start is counted until the task is queued, so
        // the destructor's last look either waits for it or refuses it (AllocateTask checked
        // `stopping`, but the destructor may have started since). The task's block holds the
        // core, so freeing it after leaving the count is safe.
        try
        {
            EnterFromOutside(Arrival::New, "Start");
        }
        catch (...)
        {
            task->body->destroy(task->callable);
            FreeUnstartedTask(task);
            throw;
        }
    }
    LeaveFromOutsideAtExit leave{worker ? nullptr : this};
    CountStart(worker); // before the enqueue publishes the task, so before its end is counted
    try
    {
        if (worker)
            EnqueueFrom(worker, reinterpret_cast<std::uintptr_t>(task), task->priority,
                        Arrival::New);
        else
            EnqueueShared(reinterpret_cast<std::uintptr_t>(task), task->priority);
    }
    catch (...)
    {
        // Nothing was queued: the start fails as a whole and the caller gets the exception.
        CountEnd(worker);
        task->body->destroy(task->callable);
        FreeUnstartedTask(task);
        throw;
    }
}

Task* SchedulerCore::StartOnFinishedStack(Worker& worker, Task* finished) noexcept
{
    // Only where a finished task would switch straight to the next one anyway, or within a host
    // pump's turn (TryDequeueFreshTask checks its count, deadline and priorities, as its loop
    // would), and only a stack this core would have handed the next task itself: its own
    // allocator and guard, the callable not on it.
    if ((!worker.directSwitch && !worker.pumpTurn) || finished->scheduler != this ||
        !MadeHere(finished->stack) ||
        finished->callable != reinterpret_cast<unsigned char*>(finished) + kTaskBytes)
        return nullptr;
    Task* next = TryDequeueFreshTask(worker, finished->stack.size);
    if (!next)
        return nullptr;
    CheckCanary(finished);
    if (taskHooks)
        CallTaskHook(options.hooks.taskLeave, finished);
    // The running context changes hands with its stack: the next switch away saves into it, and
    // the sanitizers' description of the stack (and ThreadSanitizer's fiber) stays true.
    // `finished` keeps stale copies: nothing reads them before its block is freed.
    next->stack = finished->stack;
    next->context = finished->context;
    next->contextReady = true;
    worker.current = next;
    CountEnd(&worker);
    EndForJoiner(finished, "ended with an exception"); // the last use of `finished`
    if (taskHooks)
        CallTaskHook(options.hooks.taskEnter, next);
    return next;
}

void SchedulerCore::FinishTask(Task* task, Worker* worker) noexcept
{
    // The task switched away for good: its stack is free now, and then its block.
    DestroyContext(task->context);
    ReturnStack(std::exchange(task->stack, StackMemory{}), worker);
    CountEnd(worker);
    EndForJoiner(task, "ended with an exception"); // the last use of `task`
}

std::uint64_t SchedulerCore::TakenShared() const noexcept
{
    // relaxed: it only bounds how long Stop's first look waits; the second drain, after Close,
    // is what runs everything admitted.
    std::uint64_t taken = 0;
    for (const auto& worker : workers_)
        taken += worker->takenShared.load(std::memory_order_relaxed);
    return taken;
}

std::size_t SchedulerCore::Live() const noexcept
{
    // Every end before any start: each end read here happened after its task's start was
    // counted (the start is counted before the task is queued), so the starts read next include
    // it -- the difference never goes below zero, and is zero only if no task lived at some
    // moment during the call.
    std::uint64_t ended = endedElsewhere.load(std::memory_order_acquire);
    for (const auto& worker : workers_)
        ended += worker->ended.load(std::memory_order_acquire);
    std::uint64_t started = startedElsewhere.load(std::memory_order_acquire);
    for (const auto& worker : workers_)
        started += worker->started.load(std::memory_order_acquire);
    return static_cast<std::size_t>(started - ended);
}

void SchedulerCore::FreeTask(Task* task) noexcept
{
    const bool toWorker = task->blockFromWorker;
    task->~Task();
    ReturnBlock(task, toWorker); // may delete this core (the Scheduler is gone: ReturnBlockSlow)
}

// ---------------------------------------------------------------------------------------------
// The switch away from a running task

namespace
{
// SwitchAway's general case: `next` (nullptr: none) is the pick, which may need a stack bound
// first (or end unrun, and then the one after it is taken); task hooks are called.
[[gnu::noinline]] void SwitchAwayGeneral(Worker& worker, Task* self, PostSwitch action,
                                         Task* next) noexcept
{
    SchedulerCore* core = worker.core;
    while (next && !core->PrepareToRun(next, &worker))
        next = core->TryDequeueLocalTask(worker); // it ended unrun (no stack): the next one
    ExecutionContext* destination = &worker.context;
    if (next)
    {
        worker.current = next;
        if (core->taskHooks)
            CallTaskHook(core->options.hooks.taskEnter, next);
        destination = &next->context;
    }
    else
        worker.current = nullptr;
    SwitchTo(self->context, *destination, &worker, action == PostSwitch::Finish);
}

// SwitchAway with task hooks: taskLeave before the pick, as the hook may queue work.
[[gnu::noinline]] void SwitchAwayWithHooks(Worker& worker, Task* self, PostSwitch action) noexcept
{
    CallTaskHook(worker.core->options.hooks.taskLeave, self);
    SwitchAwayGeneral(worker, self, action,
                      worker.directSwitch ? worker.core->TryDequeueLocalTask(worker) : nullptr);
}
} // namespace

void SwitchAway(Worker& currentWorker, Task* self, PostSwitch action, SchedulerCore* target) noexcept
{
    Worker* worker = &currentWorker;
    TC_CHECK(action == PostSwitch::Finish || ExecutorScope::Innermost() == worker->taskScope,
             "ExecutorScope held across a suspension",
             "a task suspended while an ExecutorScope it opened was still alive");
    CheckCanary(self);
    worker->post = action;
    worker->postTask = self;
    if (action == PostSwitch::Requeue)
        worker->postTarget = target; // read for Requeue only
    // The common case calls nothing before the switch, so it saves no registers: TaskSwitch
    // 22.1-23.0 -> 19.0-19.4 ns per two switches (guides/performance.md).
    SchedulerCore* core = worker->core;
    if (core->taskHooks) [[unlikely]]
    {
        SwitchAwayWithHooks(*worker, self, action);
        return;
    }
    Task* next = worker->directSwitch ? core->TryDequeueLocalTask(*worker) : nullptr;
    if (next && !next->contextReady) [[unlikely]]
    {
        SwitchAwayGeneral(*worker, self, action, next);
        return;
    }
    // Straight to the next ready task (one switch, and its first act is our post action), or
    // back to the worker loop. The last call, so with the assembly backend a jump: when this
    // task runs again (perhaps on another thread), it continues straight in SwitchAway's caller.
    worker->current = next;
    SwitchTo(self->context, next ? next->context : worker->context, worker,
             action == PostSwitch::Finish);
}
} // namespace TC::detail

// =============================================================================================
// Public API

namespace TC
{
using namespace detail;

Scheduler::Scheduler(SchedulerOptions options)
    : core_(std::make_unique<SchedulerCore>(this, std::move(options)))
{
    // RunFor's checks read the deadline clock: its one-time set-up (a read of the kernel's
    // clock source) happens here, not in a host's first frame.
    DeadlineNowNanoseconds();
}

Scheduler::Scheduler(unsigned workerCount)
    : Scheduler([workerCount] {
          SchedulerOptions options;
          options.workerCount = workerCount;
          return options;
      }())
{
}

Scheduler::~Scheduler()
{
    try
    {
        core_->Stop("~Scheduler");
    }
    catch (const std::exception& error)
    {
        // Called from its own work (or a pumped coroutine threw): it cannot go on, and a
        // destructor cannot throw; the message names the rule, which std::terminate may not.
        std::fprintf(stderr, "TC: %s\n", error.what());
        std::abort();
    }
    // The core holds one count for this object: JoinHandles still holding finished tasks keep it
    // alive, and whoever drops the last count (here, or the last handle's release) deletes it.
    SchedulerCore* core = core_.release();
    if (core->Orphan())
        delete core;
}

Task* Scheduler::AllocateTask(const TaskOptions& options, const TaskBody& body, void*& slot)
{
    return core_->AllocateTask(options, body, slot);
}

void Scheduler::FreeUnstartedTask(Task* task) noexcept
{
    core_->FreeUnstartedTask(task);
}

Task* Scheduler::LaunchTask(Task* task)
{
    core_->Launch(task);
    return task;
}

void Scheduler::Submit(std::coroutine_handle<> handle)
{
    Submit(handle, Priority::Normal);
}

void Scheduler::Submit(ParkedWork work)
{
    Submit(work.handle, Priority::Normal);
}

void Scheduler::Submit(std::coroutine_handle<> handle, Priority priority)
{
    core_->Enqueue(reinterpret_cast<std::uintptr_t>(handle.address()) | kCoroutineTag, priority,
                   Arrival::New);
}

PumpResult Scheduler::RunPending(std::size_t maxTasks, Priority lowest)
{
    core_->CheckHostThread(false);
    return core_->Pump(maxTasks, lowest, 0, true);
}

PumpResult Scheduler::RunFor(Duration budget, Priority lowest)
{
    core_->CheckHostThread(false);
    if (core_->QueuedApprox(&core_->HostWorker(), lowest) == 0)
    {
        core_->NoteHostQueues(lowest, 0);
        return PumpResult{0, 0, budget}; // an idle turn reads no clock
    }
    const std::int64_t now = SteadyNowNanoseconds();
    const std::int64_t deadline =
        budget.IsInfinite() ? INT64_MAX
                            : DeadlineAfter(now, std::max<std::int64_t>(budget.Nanoseconds(), 1));
    return core_->Pump(SIZE_MAX, lowest, deadline, false);
}

PumpResult Scheduler::RunUntilIdle(Priority lowest)
{
    core_->CheckHostThread(false);
    return core_->Pump(SIZE_MAX, lowest, 0, false);
}

bool Scheduler::WaitForWork(Duration timeout)
{
    core_->CheckHostThread(false);
    Worker& worker = core_->HostWorker();
    if (core_->QueuedApprox(&worker, Priority::Normal) != 0)
        return true;
    if (core_->stopped.load(std::memory_order_acquire))
        return false; // no work can come any more
    const std::int64_t deadline =
        timeout.IsInfinite() ? INT64_MAX
                             : DeadlineAfter(SteadyNowNanoseconds(), timeout.Nanoseconds());
    for (;;)
    {
        core_->RegisterSleeper(worker.parker);
        core_->StoreLoadBarrier();
        if (!core_->HasQueuedWork(Priority::Normal))
        {
            const std::int64_t left = deadline - SteadyNowNanoseconds();
            if (left > 0)
                SleepOnWord(worker.word, kWordWork,
                            timeout.IsInfinite() ? Duration::Infinite() : Duration::FromNanoseconds(left));
        }
        core_->UnregisterSleeper(worker.parker);
        if (core_->HasQueuedWork(Priority::Normal))
            return true;
        if (SteadyNowNanoseconds() >= deadline)
            return false;
    }
}

void Scheduler::Stop()
{
    core_->Stop("Stop");
}

bool Scheduler::Stopped() const noexcept
{
    return core_->stopped.load(std::memory_order_acquire);
}

void Scheduler::RequestShutdown() noexcept
{
    core_->shutdownRequested.store(true, std::memory_order_release);
}

bool Scheduler::ShutdownRequested() const noexcept
{
    return core_->shutdownRequested.load(std::memory_order_acquire);
}

unsigned Scheduler::WorkerCount() const noexcept
{
    return core_->options.workerCount;
}

const std::string& Scheduler::Name() const noexcept
{
    return core_->options.name;
}

std::size_t Scheduler::LiveTasks() const noexcept
{
    return core_->Live();
}

std::size_t Scheduler::TrimStackPool() noexcept
{
    return core_->TrimStackPool();
}

Scheduler* Scheduler::Current() noexcept
{
    Worker* worker = CurrentThread().worker;
    return worker ? worker->core->owner : nullptr;
}

void JoinHandle::Join()
{
    if (!task_)
        throw std::logic_error("TC::JoinHandle::Join: the handle is empty (already joined, "
                               "detached or moved from)");
    Task* task = task_;
    if (task->join.load(std::memory_order_acquire) != kJoinFinished)
    {
        struct JoinCallback final : ISuspendCallback
        {
            Task* task;
            explicit JoinCallback(Task* t) : task(t) {}
            void OnSuspended(SuspendedTask waiter) noexcept override
            {
                std::uintptr_t expected = kJoinRunning;
                if (!task->join.compare_exchange_strong(
                        expected, reinterpret_cast<std::uintptr_t>(waiter.Entry()),
                        std::memory_order_acq_rel, std::memory_order_acquire))
                    ResumeTask(waiter); // finished in the meantime
            }
        } callback(task);
        SuspendTask(&callback);
    }
    // Finished: the block is ours to free (EndForJoiner).
    std::exception_ptr error = std::move(task->error);
    task_ = nullptr;
    task->scheduler->FreeTask(task);
    if (error)
        std::rethrow_exception(error);
}

void JoinHandle::Detach() noexcept
{
    Task* task = std::exchange(task_, nullptr);
    if (!task)
        return;
    std::uintptr_t expected = kJoinRunning;
    if (task->join.compare_exchange_strong(expected, kJoinDetached, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
        return; // the task frees its block when it ends (EndForJoiner)
    // Already finished: nobody will see what it threw, and the block is ours to free.
    if (task->error)
        DetachedTaskFailed(task);
    task->scheduler->FreeTask(task);
}

bool JoinHandle::IsFinished() const noexcept
{
    return task_ && task_->join.load(std::memory_order_acquire) == kJoinFinished;
}

void YieldTask()
{
    Task* task = CurrentTask();
    if (!task)
    {
        std::this_thread::yield();
        return;
    }
    SwitchAway(*CurrentThread().worker, task, PostSwitch::Requeue, task->scheduler);
}

void MoveCurrentTaskTo(Scheduler& target, Priority priority)
{
    Task* task = CurrentTask();
    if (!task)
        throw std::logic_error("TC::MoveCurrentTaskTo: called outside a task");
    SchedulerCore* destination = target.core_.get();
    if (destination == task->scheduler)
    {
        task->priority = priority;
        YieldTask();
        return;
    }
    // Admitted before anything changes hands (refused: the task stays where it is), and counted
    // until the switch's other side has queued it there (RunPostSwitch).
    destination->EnterFromOutside(Arrival::New, "MoveCurrentTaskTo");
    // The task now belongs to the destination: its live count, its queues, its stack pool, and
    // its block (which goes back to the destination's pool).
    destination->startedElsewhere.fetch_add(1, std::memory_order_release);
    destination->blocks.fetch_add(1, std::memory_order_relaxed);
    SchedulerCore* source = task->scheduler;
    task->scheduler = destination;
    task->priority = priority;
    source->endedElsewhere.fetch_add(1, std::memory_order_release);
    if (source->DropBlocks(1))
        delete source; // its Scheduler is gone already (it held a count of its own)
    SwitchAway(*CurrentThread().worker, task, PostSwitch::Requeue, destination);
}

bool ShutdownRequested() noexcept
{
    Worker* worker = CurrentThread().worker;
    return worker && worker->core->shutdownRequested.load(std::memory_order_acquire);
}
} // namespace TC
