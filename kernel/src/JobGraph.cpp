// JobGraph's runs: the participants (the caller and helper tasks) take ready jobs from the roots'
// parts and from a shared queue, and run the first successor each job readies next, on the same
// stack.

#include "JobGraphState.h"
#include "SplitParts.h"

#include <TC/JobGraph.h>
#include <TC/Suspend.h>
#include <TC/detail/SpinLock.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

namespace TC::detail
{
namespace
{
// At most this many helpers, whatever the worker count (the occupied slots are one word's bits).
constexpr unsigned kMaxHelpers = 63;
// The waiter word once the last sink was counted.
constexpr std::uintptr_t kRoundDone = 1;
// Successors one job readies beyond its first, gathered before one push to the shared queue.
constexpr unsigned kPushBatch = 32;

} // namespace

// One run's state, shared by the caller and its helpers; the graph keeps it for its next run
// once the last helper let go, and a helper that starts after its run ended finds it empty.
struct GraphRound
{
    const GraphJob* jobs = nullptr;
    const GraphEdge* successors = nullptr;
    const std::uint32_t* roots = nullptr;
    GraphCounterLine* counterLines = nullptr;
    std::uint32_t jobCount = 0;
    std::uint32_t sinkCount = 0;
    unsigned slots = 0; // participants at most: the caller's slot 0 and the helpers'
    Scheduler* scheduler = nullptr;
    TaskOptions helperOptions;
    std::unique_ptr<SplitPart[]> parts;
    // The ready jobs that were not run at once, each pushed once a run: (epoch << 32 | job) in
    // the slot the push reserved, so a slot of an earlier run never reads as filled.
    std::unique_ptr<std::atomic<std::uint64_t>[]> queue;
    std::uint64_t epoch = 0;
    std::exception_ptr error; // the first job's that threw; read once the run ended
    std::atomic<bool> failed{false};
    std::atomic<unsigned> holders{1}; // the graph and each helper started
    alignas(64) std::atomic<std::uint32_t> head{0};
    alignas(64) std::atomic<std::uint32_t> tail{0};
    alignas(64) std::atomic<std::uint64_t> occupied{1}; // bit i: slot i's participant is in
    alignas(64) std::atomic<std::uint32_t> sinksDone{0};
    std::atomic<std::uintptr_t> waiter{0}; // 0, kRoundDone, or the waiting caller's entry

    void Release() noexcept
    {
        if (holders.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

    bool Done() const noexcept { return waiter.load(std::memory_order_acquire) == kRoundDone; }

    // The next root of `self`'s part; false when it is empty.
    bool TakeRoot(unsigned self, std::uint32_t& job) const noexcept
    {
        SplitPart& part = parts[self];
        std::uint64_t word = part.word.load(std::memory_order_acquire);
        while (LeftIn(word) != 0)
        {
            if (part.word.compare_exchange_weak(word, Pack(BeginOf(word) + 1, EndOf(word)),
                                                std::memory_order_acq_rel,
                                                std::memory_order_acquire))
            {
                job = roots[BeginOf(word)];
                return true;
            }
        }
        return false;
    }


    // The oldest queued job; false when none is, or the oldest one's push is not complete yet
    // (its pusher is between reserving the slot and filling it).
    bool Pop(std::uint32_t& job) noexcept
    {
        std::uint32_t first = head.load(std::memory_order_acquire);
        for (;;)
        {
            if (first >= tail.load(std::memory_order_acquire))
                return false;
            const std::uint64_t entry = queue[first].load(std::memory_order_acquire);
            if (entry >> 32 != epoch)
                return false;
            if (head.compare_exchange_weak(first, first + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
            {
                job = static_cast<std::uint32_t>(entry);
                return true;
            }
        }
    }

    // Queues `count` ready jobs, then starts a helper in each free slot, up to `count`.
    void Push(const std::uint32_t* ready, unsigned count) noexcept
    {
        // seq_cst with the load of `occupied` below, against a helper's leaving (Leave): either
        // this push sees its slot free, or the helper sees this push's jobs.
        const std::uint32_t at = tail.fetch_add(count, std::memory_order_seq_cst);
        for (unsigned i = 0; i < count; ++i)
            queue[at + i].store(epoch << 32 | ready[i], std::memory_order_release);
        std::uint64_t taken = occupied.load(std::memory_order_seq_cst);
        const std::uint64_t all = slots == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << slots) - 1;
        while (count != 0 && taken != all)
        {
            const unsigned slot = static_cast<unsigned>(std::countr_one(taken));
            const std::uint64_t bit = std::uint64_t{1} << slot;
            if (occupied.compare_exchange_weak(taken, taken | bit, std::memory_order_seq_cst))
            {
                try
                {
                    StartHelpers(slot, 1);
                }
                catch (...) // the jobs are left for the participants in
                {
                }
                taken |= bit;
                --count;
            }
        }
    }

    // Starts `count` helpers for slots first, first + 1, ... (already marked occupied); if the
    // start throws, frees those slots and rethrows.
    void StartHelpers(unsigned first, unsigned count)
    {
        holders.fetch_add(count, std::memory_order_relaxed); // published by the start
        try
        {
            GraphRound* round = this;
            scheduler->StartBulkDetached(
                count,
                [round, first](std::size_t i)
                {
                    round->Participate(first + static_cast<unsigned>(i));
                    round->Release();
                },
                helperOptions);
        }
        catch (...)
        {
            holders.fetch_sub(count, std::memory_order_relaxed); // no helper started
            const std::uint64_t mask = ((std::uint64_t{1} << count) - 1) << first;
            occupied.fetch_and(~mask, std::memory_order_seq_cst);
            throw;
        }
    }

    bool Queued() const noexcept
    {
        return head.load(std::memory_order_seq_cst) < tail.load(std::memory_order_seq_cst);
    }

    bool WorkVisible() const noexcept
    {
        if (Queued())
            return true;
        for (unsigned i = 0; i < slots; ++i)
            if (LeftIn(parts[i].word.load(std::memory_order_seq_cst)) != 0)
                return true;
        return false;
    }

    bool FindJob(unsigned self, std::uint32_t& job) noexcept
    {
        if (TakeRoot(self, job) || Pop(job))
            return true;
        while (StealHalf(parts.get(), slots, self))
            if (TakeRoot(self, job))
                return true;
        return false;
    }

    void RunBody(const GraphJob& job) noexcept
    {
        if (failed.load(std::memory_order_relaxed))
            return; // skipped: an earlier job threw
        try
        {
            job.invoke(job.callable);
        }
        catch (...)
        {
            if (!failed.exchange(true, std::memory_order_acq_rel))
                error = std::current_exception();
        }
    }

    // Runs `job`, then the first successor each job readies, pushing the others; returns the
    // sinks it ran.
    std::uint32_t RunChain(std::uint32_t job) noexcept
    {
        std::uint32_t sinks = 0;
        std::uint32_t ready[kPushBatch];
        unsigned readyCount = 0;
        for (;;)
        {
            const GraphJob& current = jobs[job];
            RunBody(current);
            std::uint32_t next = jobCount;
            const GraphEdge* edge = successors + current.firstSuccessor;
            const GraphEdge* const end = edge + current.successorCount;
            for (; edge != end; ++edge)
            {
                if (edge->counter != kNoCounter && !CountDown(edge->counter))
                    continue;
                const std::uint32_t s = edge->job;
                if (next == jobCount)
                    next = s;
                else
                {
                    ready[readyCount++] = s;
                    if (readyCount == kPushBatch)
                    {
                        Push(ready, readyCount);
                        readyCount = 0;
                    }
                }
            }
            if (readyCount != 0)
            {
                Push(ready, readyCount);
                readyCount = 0;
            }
            if (current.successorCount == 0)
                ++sinks;
            if (next == jobCount)
                return sinks;
            job = next;
        }
    }

    // Counts down `counter` and the counters it completes; true when that readied their job.
    bool CountDown(std::uint32_t counter) noexcept
    {
        do
        {
            GraphCounter& c = counterLines[counter / 4].counters[counter % 4];
            // acq_rel: the decrements of one run form a release sequence, so the one that finds
            // the count at zero sees every prerequisite's writes, and passes them on by counting
            // down the parent, by running the job itself or by the queue's release store.
            if (c.left.fetch_sub(1, std::memory_order_acq_rel) != 1)
                return false;
            c.left.store(c.initial, std::memory_order_relaxed); // for the next run, after this one
            counter = c.parent;
        } while (counter != kNoCounter);
        return true;
    }

    // Counts `count` sinks run; the one that counts the last resumes the waiting caller.
    void CountSinks(std::uint32_t count) noexcept
    {
        if (count == 0 ||
            sinksDone.fetch_add(count, std::memory_order_acq_rel) + count != sinkCount)
            return;
        const std::uintptr_t previous = waiter.exchange(kRoundDone, std::memory_order_acq_rel);
        if (previous != 0)
            ResumeTask(SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(previous)));
    }

    // Spins while that holds nothing up, for about 20 us at most, until work shows or the run
    // ended; true when work showed.
    bool SpinForWork() const noexcept
    {
        using Clock = std::chrono::steady_clock;
        Clock::time_point until{};
        for (unsigned i = 1;; ++i)
        {
            if (Done())
                return false;
            if (i % 8 == 0)
            {
                // Only the queue: once FindJob found the parts empty they fill again only by a
                // steal, whose stealer runs what it took; reading the parts here would take
                // their lines from the participants still taking roots from them.
                if (Queued())
                    return true;
                if (!SpinBeforeWaitHoldsNothingUp())
                    return false;
                const Clock::time_point now = Clock::now();
                if (until == Clock::time_point{})
                    until = now + std::chrono::microseconds(20);
                else if (now >= until)
                    return false;
            }
            CpuRelax();
        }
    }

    // A participant gives up its slot (a pusher may start a helper in it); true when it took it
    // back because work showed meanwhile.
    bool Leave(unsigned self) noexcept
    {
        const std::uint64_t bit = std::uint64_t{1} << self;
        std::uint64_t taken = occupied.fetch_and(~bit, std::memory_order_seq_cst) & ~bit;
        if (Done() || !WorkVisible())
            return false;
        while ((taken & bit) == 0)
            if (occupied.compare_exchange_weak(taken, taken | bit, std::memory_order_seq_cst))
                return true;
        return false; // a pusher started another helper in this slot
    }

    // Runs ready jobs in slot `self` until none shows for a while or the run ended; the caller
    // then waits for the end, a helper ends.
    void Participate(unsigned self) noexcept
    {
        for (;;)
        {
            std::uint32_t sinks = 0;
            std::uint32_t job;
            while (FindJob(self, job))
                sinks += RunChain(job);
            CountSinks(sinks);
            if (!SpinForWork() && !Leave(self))
                return;
        }
    }
};

namespace
{
// The caller's wait for the run's last sink.
struct AwaitRound final : ISuspendCallback
{
    GraphRound* round;
    explicit AwaitRound(GraphRound* r) : round(r) {}
    void OnSuspended(SuspendedTask waiter) noexcept override
    {
        std::uintptr_t expected = 0;
        if (!round->waiter.compare_exchange_strong(
                expected, reinterpret_cast<std::uintptr_t>(waiter.Entry()),
                std::memory_order_acq_rel, std::memory_order_acquire))
            ResumeTask(waiter); // the last sink ran meanwhile
    }
};

// How many helpers a run may have on `scheduler`.
unsigned HelperCount(Scheduler& scheduler) noexcept
{
    std::size_t helpers = scheduler.WorkerCount();
    if (helpers != 0 && Scheduler::Current() == &scheduler)
        --helpers; // the caller occupies one of its workers
    return static_cast<unsigned>(std::min<std::size_t>(helpers, kMaxHelpers));
}

} // namespace

} // namespace TC::detail

namespace TC
{
JobGraph::JobGraph() : state_(std::make_unique<detail::GraphState>()) {}

JobGraph::~JobGraph()
{
    for (const auto& job : state_->jobs)
    {
        job.body->destroy(job.callable);
        ::operator delete (job.callable, std::align_val_t{job.body->alignment});
    }
    if (state_->round)
        state_->round->Release();
}

void JobGraph::Run(Scheduler& scheduler, const TaskOptions& helperOptions)
{
    detail::GraphState& state = *state_;
    if (state.running.exchange(true, std::memory_order_acquire))
        throw std::logic_error("JobGraph::Run: the graph is already running");
    struct Running
    {
        detail::GraphState& state;
        ~Running() { state.running.store(false, std::memory_order_release); }
    } running{state};
    if (state.jobs.empty())
        return;
    if (!state.compiled)
    {
        if (state.round)
            std::exchange(state.round, nullptr)->Release(); // sized for the old shape
        state.Compile();
    }
    const unsigned helpers = detail::HelperCount(scheduler);
    const unsigned slots = helpers + 1;
    detail::GraphRound* round = state.round;
    if (round && (round->slots != slots || round->holders.load(std::memory_order_acquire) != 1))
    {
        round->Release(); // a helper of an earlier run still holds it, or it has other slots
        round = state.round = nullptr;
    }
    if (!round)
    {
        auto fresh = std::make_unique<detail::GraphRound>();
        fresh->jobs = state.compiledJobs.data();
        fresh->successors = state.successors.data();
        fresh->roots = state.roots.data();
        fresh->counterLines = state.counterLines.get();
        fresh->jobCount = static_cast<std::uint32_t>(state.jobs.size());
        fresh->sinkCount = state.sinks;
        fresh->slots = slots;
        fresh->parts.reset(new detail::SplitPart[slots]);
        fresh->queue.reset(new std::atomic<std::uint64_t>[state.jobs.size()]()); // epoch 0
        round = state.round = fresh.release();
    }
    // Reset for this run: no helper holds the round, so none reads it meanwhile.
    round->scheduler = &scheduler;
    round->helperOptions = helperOptions;
    ++round->epoch;
    round->error = nullptr;
    round->failed.store(false, std::memory_order_relaxed);
    round->head.store(0, std::memory_order_relaxed);
    round->tail.store(0, std::memory_order_relaxed);
    round->sinksDone.store(0, std::memory_order_relaxed);
    round->waiter.store(0, std::memory_order_relaxed);
    const auto rootCount = static_cast<std::uint64_t>(state.roots.size());
    const unsigned starting =
        static_cast<unsigned>(std::min<std::uint64_t>(helpers, rootCount - 1));
    for (unsigned i = 0; i < slots; ++i)
    {
        const std::uint64_t first = i <= starting ? rootCount * i / (starting + 1) : rootCount;
        const std::uint64_t last = i <= starting ? rootCount * (i + 1) / (starting + 1) : rootCount;
        round->parts[i].word.store(detail::Pack(first, last), std::memory_order_relaxed);
    }
    round->occupied.store((std::uint64_t{2} << starting) - 1, std::memory_order_relaxed);
    if (starting != 0)
        round->StartHelpers(1, starting); // throwing, it started none and no job ran
    round->Participate(0);
    if (!round->Done())
    {
        detail::AwaitRound await(round);
        SuspendTask(&await);
    }
    if (round->failed.load(std::memory_order_acquire))
        std::rethrow_exception(std::exchange(round->error, nullptr));
}
} // namespace TC
