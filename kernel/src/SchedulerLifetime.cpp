// Construction and shutdown of a scheduler's core: its workers, Stop's drains, and the handshake
// that admits or refuses work from outside while it closes.

#include "SchedulerInternals.h"

#include "Diagnostics.h"
#include "HostedSchedulers.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace TC::detail
{
namespace
{
// How long Stop's drain sleeps at most between looks: no wake-up comes when a task ends (on a
// worker, or in the host's own wait) or when another thread's pump turn ends.
const Duration kWorkersDrainPoll{std::chrono::microseconds(200)};
const Duration kHostDrainPoll{std::chrono::milliseconds(10)};
const Duration kHostTurnPoll{std::chrono::microseconds(50)};
} // namespace

SchedulerCore::SchedulerCore(Scheduler* owner_, SchedulerOptions options_)
    : owner(owner_), options(std::move(options_)),
      allocator(options.stackAllocator ? options.stackAllocator : &DefaultStackAllocator()),
      defaultStackSize(RoundUp(options.stackSize < 4 * PageSize() ? 4 * PageSize() : options.stackSize,
                               PageSize())),
      taskHooks(static_cast<bool>(options.hooks.taskEnter) || static_cast<bool>(options.hooks.taskLeave)),
      coroutineHooks(static_cast<bool>(options.hooks.coroutineEnter) ||
                     static_cast<bool>(options.hooks.coroutineLeave))
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
    if (options.workerCount == 0)
    {
        // The creating thread's waits pump it until another thread pumps it first: a game's main
        // thread that starts tasks on its scheduler and waits before its first frame does not
        // deadlock on them (PumpForWait makes it the host then).
        BindHost(CurrentThread());
    }
    for (auto& worker : workers_)
        workerPointers_.push_back(worker.get());
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
    registry_.core = this;
    registry_.name = options.name.c_str();
    registry_.workers = workerPointers_.data();
    registry_.workerCount = static_cast<unsigned>(workerPointers_.size());
    registry_.hasWorkerThreads = HasWorkerThreads();
    RegisterCore(registry_);
}

SchedulerCore::~SchedulerCore()
{
    UnregisterCore(registry_);
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
            ReportShutdownHang();
        }
    };
    // The first look's bound: the shared queue counts as drained once it ran empty, or once as
    // many items were taken from it as it held when Stop began. A thread that keeps submitting
    // faster than the work runs then delays the last look by that backlog, not for ever; what it
    // queues meanwhile runs in the second drain.
    const std::uint64_t takenAtStart = TakenShared();
    const std::size_t backlogAtStart = QueuedApprox(nullptr, kLowestPriority);
    auto sharedDrained = [&](bool bounded)
    {
        return !HasQueuedWork(kLowestPriority) ||
               (bounded && TakenShared() - takenAtStart >= backlogAtStart);
    };
    // Nothing left to wait for: no task lives, no coroutine parked here waits for its deadline
    // (acquire: its delivery, queued before the count dropped, is seen), the shared queue is
    // drained.
    auto finished = [&](bool bounded)
    {
        return Live() == 0 && timedCoroutines.load(std::memory_order_acquire) == 0 &&
               sharedDrained(bounded);
    };
    // Until no task lives, no coroutine parked here waits for a deadline, and the shared queue is
    // drained (bounded: see above; else empty): the workers run it, or this thread pumps. Either
    // way this thread also pumps the other schedulers it hosts, as any wait on a host thread
    // does: this scheduler's tasks may wait on their work (a worker scheduler destroyed before
    // the host scheduler its tasks wait on).
    ThreadState& thread = CurrentThread();
    HostedSchedulers hosts(thread, this);
    auto drain = [&](bool bounded)
    {
        std::atomic<std::uint32_t> word{0};
        Parker parker{&word};
        for (;;)
        {
            Duration nap = HasWorkerThreads() ? kWorkersDrainPoll : kHostDrainPoll;
            if (HasWorkerThreads())
            {
                if (finished(bounded))
                    return;
            }
            else
            {
                // The host may be pumping it from a wait on its own thread: the drain takes turns
                // with it, and decides only while it holds the pump, when no item can be in flight
                // between the host worker's queue and a pump.
                const HostPumpTurn turn(*this, thread);
                if (turn.Busy())
                    nap = kHostTurnPoll;
                else
                {
                    // Bounded, a pump runs only what was queued when it began, or a steady
                    // submitter would keep it running; what its work queued on the host worker
                    // (one host task waking another) runs in the next round, without a sleep.
                    Pump(SIZE_MAX, kLowestPriority, 0, bounded);
                    const bool localEmpty = HostWorker().LocalQueuesEmpty();
                    if (!localEmpty)
                        continue;
                    if (finished(bounded))
                        return;
                }
            }
            if (hosts.PumpRound())
                continue;
            // Asleep until work is submitted here or to a scheduler this thread hosts; a task
            // that ends, or the host pumping in its wait, wakes nobody: hence the nap's limit.
            bool work = hosts.RegisterAndLook(word);
            if (!HasWorkerThreads())
            {
                RegisterSleeper(parker);
                StoreLoadBarrier();
                work |= HasQueuedWork(kLowestPriority);
            }
            if (!work)
                SleepOnWord(word, kWordWork, nap);
            if (!HasWorkerThreads())
                UnregisterSleeper(parker);
            hosts.Unregister();
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

void SchedulerCore::ReportShutdownHang() const
{
    // One write, so the lines of two schedulers' reports do not interleave.
    std::ostringstream report;
    report << "TC: ~Scheduler('" << options.name << "') has waited 5 s for " << Live()
           << " task(s) to finish; it keeps waiting (resume or finish every task before "
              "destroying its scheduler). Its tasks now:\n";
    DumpTasksOf(report, *this);
    const std::string text = report.str();
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
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
    if (!ClaimHost() && !forDestructor)
        throw std::logic_error("TC::Scheduler('" + options.name
                               + "') is pumped by its host thread only (the first thread that "
                                 "pumped it, or the thread that created it if that one waited "
                                 "before any thread pumped it)");
}

bool SchedulerCore::ClaimHost() noexcept
{
    const auto self = std::this_thread::get_id();
    if (!hostBound_.load(std::memory_order_acquire))
    {
        bool expected = false;
        if (hostClaimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
        {
            hostThread_ = self;
            hostBound_.store(true, std::memory_order_release);
            return true;
        }
        while (!hostBound_.load(std::memory_order_acquire)) // the other claimant writes it now
            CpuRelax();
    }
    return hostThread_ == self;
}
} // namespace TC::detail
