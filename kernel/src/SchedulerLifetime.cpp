// Construction and shutdown of a scheduler's core: its workers, Stop's drains, and the handshake
// that admits or refuses work from outside while it closes.

#include "SchedulerInternals.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace TC::detail
{
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
            FreeStack(stack);
    for (auto& [size, stacks] : stackPool_)
        for (StackMemory& stack : stacks)
            FreeStack(stack);
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
} // namespace TC::detail
