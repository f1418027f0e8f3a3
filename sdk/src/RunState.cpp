// The test kit's run: seeded participants, the race-point hook that perturbs them, and the
// lost wake-up and double resume detection.

#include "RunState.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <stdexcept>
#include <typeinfo>

namespace TC::Testing::detail
{
namespace
{
std::string Demangle(const char* name)
{
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && text ? text.get() : name;
}

std::string WaitsOn(const SuspendedTaskEntry& entry)
{
    return entry.callback_ ? Demangle(typeid(*entry.callback_).name()) : std::string("?");
}

const char* KindName(const SuspendedTaskEntry& entry) noexcept
{
    switch (entry.kind_)
    {
    case TC::detail::WaiterKind::Task:
        return "task";
    case TC::detail::WaiterKind::Thread:
        return "thread";
    case TC::detail::WaiterKind::Coroutine:
        return "coroutine";
    }
    return "waiter";
}

double Seconds(Clock::duration d) noexcept
{
    return std::chrono::duration<double>(d).count();
}


std::atomic<RunState*> activeRun{nullptr};
std::atomic<bool> runBusy{false};
std::atomic<std::uint64_t> runGeneration{0};
thread_local unsigned pumpNesting = 0;

// Runs that hung: kept alive (and reachable, so leak checkers stay quiet) for the process's life.
std::mutex graveyardLock;
std::vector<RunState*>& Graveyard()
{
    static auto* graveyard = new std::vector<RunState*>();
    return *graveyard;
}

void Hook(RacePoint point, SuspendedTask task) noexcept
{
    if (RunState* run = activeRun.load(std::memory_order_acquire))
        run->OnRacePoint(point, task);
}

// Stress mode: each thread draws its own delays, seeded from the run's seed and the order in
// which threads first reach a race point in this run.
struct ThreadRng
{
    std::uint64_t generation = 0;
    Rng rng;
};
thread_local ThreadRng threadRng;
std::atomic<std::uint64_t> threadRngCounter{0};

// The OnSuspended call running on this thread, between its two race points: a wait that
// begins inside it reaches BeforeOnSuspended again on this thread before AfterOnSuspended.
// Reset by the first race point of each run, so a callback of an earlier run does not count.
struct CallbackInProgress
{
    std::uint64_t generation = 0;
    const SuspendedTaskEntry* entry = nullptr; // the waiter whose OnSuspended runs, or null
};
thread_local CallbackInProgress callbackInProgress;

CallbackInProgress& CurrentCallback() noexcept
{
    const std::uint64_t generation = runGeneration.load(std::memory_order_relaxed);
    if (callbackInProgress.generation != generation)
        callbackInProgress = CallbackInProgress{generation, nullptr};
    return callbackInProgress;
}

Rng& StressRng(std::uint64_t seed) noexcept
{
    const std::uint64_t generation = runGeneration.load(std::memory_order_relaxed);
    if (threadRng.generation != generation)
    {
        threadRng.generation = generation;
        threadRng.rng.Seed(seed ^ (0x51ED27ull * (threadRngCounter.fetch_add(1) + 1)));
    }
    return threadRng.rng;
}
} // namespace

Strands::DetachedTask DriveCoroutine(RunState& run, Scheduler& scheduler, Participant& participant)
{
    co_await scheduler.Schedule();
    try
    {
        co_await participant.coroutine();
    }
    catch (const std::exception& error)
    {
        run.Fail("participant '" + participant.name + "' threw: " + error.what());
    }
    catch (...)
    {
        run.Fail("participant '" + participant.name + "' threw a non-standard exception");
    }
    run.ParticipantDone();
}

void RunState::AssignKinds()
{
    for (Participant& p : participants_)
    {
        WaiterKind choices[3];
        std::size_t count = 0;
        const bool deterministic = options_.mode == Mode::Deterministic;
        if (p.blocking)
        {
            if (Contains(options_.waiterKinds, WaiterKind::Task) ||
                (deterministic && Contains(options_.waiterKinds, WaiterKind::Thread)))
                choices[count++] = WaiterKind::Task;
            if (!deterministic && Contains(options_.waiterKinds, WaiterKind::Thread))
                choices[count++] = WaiterKind::Thread;
        }
        if (p.coroutine && (Contains(options_.waiterKinds, WaiterKind::Coroutine) || !p.blocking))
            choices[count++] = WaiterKind::Coroutine;
        if (count == 0)
            throw std::invalid_argument("TC::Testing: participant '" + p.name +
                                        "' can run as none of StressOptions::waiterKinds");
        p.kind = choices[kindRng_.Below(count)];
    }
}

void RunState::StartParticipants(Scheduler& scheduler)
{
    for (Participant& p : participants_)
    {
        auto blocking = [this, &p]
        {
            try
            {
                p.blocking();
            }
            catch (const std::exception& error)
            {
                Fail("participant '" + p.name + "' threw: " + error.what());
            }
            catch (...)
            {
                Fail("participant '" + p.name + "' threw a non-standard exception");
            }
            ParticipantDone();
        };
        switch (p.kind)
        {
        case WaiterKind::Task:
        {
            TaskOptions taskOptions;
            taskOptions.name = p.name.c_str();
            tasks_.push_back(scheduler.Start(std::move(blocking), taskOptions));
            break;
        }
        case WaiterKind::Thread:
            threads_.emplace_back(std::move(blocking));
            break;
        case WaiterKind::Coroutine:
            DriveCoroutine(*this, scheduler, p);
            break;
        }
    }
}

bool RunState::Execute()
{
    started_ = true;
    AssignKinds();
    start_ = Clock::now();
    const auto timeLimit = std::chrono::nanoseconds(options_.runTimeLimit.Nanoseconds());
    const auto deadline =
        options_.runTimeLimit.IsInfinite() ? Clock::time_point::max() : start_ + timeLimit;
    const std::size_t total = participants_.size();
    SchedulerOptions schedulerOptions;
    schedulerOptions.stackSize = options_.stackSize;
    schedulerOptions.name = "TC::Testing";
    if (options_.mode == Mode::Deterministic)
    {
        schedulerOptions.workerCount = 0;
        schedulerOptions.shuffleSeed = shuffleSeed_;
        scheduler_ = std::make_unique<Scheduler>(schedulerOptions);
        host_ = scheduler_.get();
        hostThread_ = std::this_thread::get_id();
        StartParticipants(*scheduler_);
        for (;;)
        {
            const PumpResult pumped = host_->RunFor(Duration(std::chrono::milliseconds(50)));
            if (finished_.load(std::memory_order_acquire) == total)
                return true;
            if (Clock::now() >= deadline)
            {
                Fail("hang: the run exceeded its time limit (StressOptions::runTimeLimit)");
                hung_ = true;
                return false;
            }
            if (pumped.pending != 0)
                continue;
            // Nothing queued and one thread drives everything: unless a timer can still fire,
            // whoever is suspended now stays suspended.
            if (AnyTimedWaiter() && host_->WaitForWork(Duration(std::chrono::nanoseconds(
                                        options_.hangTimeout.Nanoseconds()))))
                continue;
            hung_ = true;
            return false;
        }
    }
    schedulerOptions.workerCount = std::max(1u, options_.workers);
    scheduler_ = std::make_unique<Scheduler>(schedulerOptions);
    StartParticipants(*scheduler_);
    const auto hangTimeout = std::chrono::nanoseconds(options_.hangTimeout.Nanoseconds());
    std::uint64_t lastActivity = activity_.load(std::memory_order_relaxed);
    auto lastChange = Clock::now();
    for (;;)
    {
        if (finished_.load(std::memory_order_acquire) == total)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const auto now = Clock::now();
        const std::uint64_t activity = activity_.load(std::memory_order_relaxed);
        if (activity != lastActivity)
        {
            lastActivity = activity;
            lastChange = now;
        }
        else if (!options_.hangTimeout.IsInfinite() && now - lastChange >= hangTimeout)
        {
            hung_ = true;
            return false;
        }
        if (now >= deadline)
        {
            Fail("hang: the run exceeded its time limit (StressOptions::runTimeLimit)");
            hung_ = true;
            return false;
        }
    }
}

void RunState::Finish()
{
    for (std::thread& thread : threads_)
        thread.join();
    for (JoinHandle& task : tasks_)
    {
        try
        {
            task.Join();
        }
        catch (...)
        {
            Fail("a task participant's exception escaped the kit");
        }
    }
    scheduler_.reset(); // waits for the tails of finished coroutines
}

void RunState::ReportStuckWaiters()
{
    const auto now = Clock::now();
    std::vector<std::string> lines;
    {
        std::lock_guard guard(trackLock_);
        std::vector<std::pair<SuspendedTaskEntry*, Tracked>> stuck(suspended_.begin(),
                                                                   suspended_.end());
        std::sort(stuck.begin(), stuck.end(),
                  [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
        for (const auto& [entry, tracked] : stuck)
        {
            // A timed wait that timed out ran on without a BeforeResume: it is not stuck.
            if (tracked.timed && entry->timedOut_)
                continue;
#if TC_CHECKED
            if (entry->state_.load(std::memory_order_acquire) != TC::detail::EntryState::Suspended)
                continue;
#endif
            ++lostWakeups_;
            char seconds[32];
            std::snprintf(seconds, sizeof seconds, "%.3f", Seconds(now - tracked.since));
            lines.push_back(std::string("lost wake-up: a ") + KindName(*entry) + " waits on " +
                            WaitsOn(*entry) + " for " + seconds +
                            " s, and nothing is left that could resume it");
        }
    }
    // Checked builds know the waiters' names: list those suspended since this run began.
    for (const SuspendedWaiterInfo& info : SnapshotSuspendedWaiters())
    {
        if (std::chrono::nanoseconds(info.suspendedFor.Nanoseconds()) > now - start_)
            continue; // older than this run: an earlier run's stuck waiter
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f",
                      static_cast<double>(info.suspendedFor.Nanoseconds()) / 1e9);
        lines.push_back("  checked-mode registry: " + info.waiter + " waits on " + info.waitsOn +
                        " for " + seconds + " s");
    }
    const std::size_t unfinished = participants_.size() - finished_.load(std::memory_order_acquire);
    std::string names;
    if (lostWakeups_ == 0)
        lines.push_back("hang: " + std::to_string(unfinished) +
                        " participant(s) unfinished with no waiter suspended on the protocol "
                        "(a livelock, or a participant busy for longer than hangTimeout)");
    std::lock_guard guard(reportLock_);
    report_.insert(report_.end(), lines.begin(), lines.end());
}

Result RunState::Collect(bool completed)
{
    if (!completed)
        ReportStuckWaiters();
    Result result;
    result.seed = seed_;
    result.mode = options_.mode;
    result.participants = participants_.size();
    for (const Participant& p : participants_)
    {
        result.tasks += p.kind == WaiterKind::Task;
        result.threads += p.kind == WaiterKind::Thread;
        result.coroutines += p.kind == WaiterKind::Coroutine;
    }
    result.finished = finished_.load(std::memory_order_acquire);
    result.lostWakeups = lostWakeups_;
    result.failedChecks = failedChecks_;
    result.hung = hung_;
    result.racePoints = racePoints_.load(std::memory_order_relaxed);
    result.perturbed = perturbed_.load(std::memory_order_relaxed);
    std::lock_guard guard(reportLock_);
    result.report = report_;
    return result;
}

void RunState::DoubleResume(const SuspendedTaskEntry& entry) noexcept
{
    std::fprintf(stderr,
                 "TC::Testing: handle resumed twice: a %s waiting on %s reached ResumeTask again "
                 "after it was resumed; claim each handle with an atomic exchange (seed %llu, "
                 "replay with RunScenario(%llu, ...))\n",
                 KindName(entry), WaitsOn(entry).c_str(), static_cast<unsigned long long>(seed_),
                 static_cast<unsigned long long>(seed_));
    std::fflush(stderr);
    std::abort();
}

void RunState::WaitInsideCallback(const SuspendedTaskEntry& outer,
                                  const SuspendedTaskEntry& inner) noexcept
{
    std::fprintf(stderr,
                 "TC::Testing: wait inside a callback: a wait on %s began inside the "
                 "OnSuspended of %s, which a %s waits on; a callback must not suspend, yield or "
                 "wait (seed %llu, replay with RunScenario(%llu, ...))\n",
                 WaitsOn(inner).c_str(), WaitsOn(outer).c_str(), KindName(outer),
                 static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_));
    std::fflush(stderr);
    std::abort();
}

void RunState::OnRacePoint(RacePoint point, SuspendedTask task) noexcept
{
    racePoints_.fetch_add(1, std::memory_order_relaxed);
    activity_.fetch_add(1, std::memory_order_relaxed);
    SuspendedTaskEntry* entry = task.Entry();
    CallbackInProgress& callback = CurrentCallback();
    if (point == RacePoint::AfterOnSuspended)
        callback.entry = nullptr;
    // Every build, release included: a wait inside OnSuspended reaches the kernel as a second
    // suspension on this thread before the first OnSuspended returned. Stopped here, before that
    // wait could block the thread (in a deterministic run, the one thread that runs everybody).
    if (point == RacePoint::BeforeOnSuspended && callback.entry)
        WaitInsideCallback(*callback.entry, *entry);
    try
    {
        if (point == RacePoint::BeforeOnSuspended)
        {
            std::lock_guard guard(trackLock_);
            suspended_[entry] = Tracked{Clock::now(), entry->timer_ != nullptr};
            seen_.insert(entry);
        }
        else if (point == RacePoint::BeforeResume)
        {
            bool twice = false;
            {
                std::lock_guard guard(trackLock_);
                twice = suspended_.erase(entry) == 0 && seen_.count(entry) != 0;
            }
            // Checked builds stop a double resume in ResumeTask, before this point; others
            // would corrupt the scheduler after it, so the kit stops here.
            if (twice)
                DoubleResume(*entry);
        }
    }
    catch (...)
    {
        // Out of memory while tracking: keep running, untracked.
    }
    Perturb(point);
    // After the perturbation, which may run other participants (and their callbacks) here.
    if (point == RacePoint::BeforeOnSuspended)
        callback.entry = entry;
}

void RunState::Perturb(RacePoint point) noexcept
{
    if (options_.mode == Mode::Stress)
    {
        if (StressRng(seed_).Chance(options_.raceProbability))
        {
            perturbed_.fetch_add(1, std::memory_order_relaxed);
            Delay();
        }
        return;
    }
    // Deterministic: between a waiter's failed check and its publication, let others run.
    if (point != RacePoint::BeforeOnSuspended || std::this_thread::get_id() != hostThread_ ||
        pumpNesting >= options_.maxNesting || !hookRng_.Chance(options_.raceProbability))
        return;
    perturbed_.fetch_add(1, std::memory_order_relaxed);
    ++pumpNesting;
    try
    {
        host_->RunPending(1 + hookRng_.Below(std::max(1u, options_.maxInterleave)));
    }
    catch (...)
    {
    }
    --pumpNesting;
}

void RunState::Delay() noexcept
{
    Rng& rng = StressRng(seed_);
    const std::int64_t maxNs = std::max<std::int64_t>(options_.maxDelay.Nanoseconds(), 1000);
    switch (rng.Below(3))
    {
    case 0:
    {
        // Spin: a few hundred nanoseconds to maxDelay without giving up the core.
        const auto until =
            Clock::now() + std::chrono::nanoseconds(rng.Below(static_cast<std::uint64_t>(maxNs)));
        while (Clock::now() < until)
        {
        }
        break;
    }
    case 1:
        std::this_thread::yield();
        break;
    default:
        std::this_thread::sleep_for(
            std::chrono::nanoseconds(rng.Below(static_cast<std::uint64_t>(maxNs))));
        break;
    }
}

void RunState::OnRaceWindow() noexcept
{
    if (options_.mode == Mode::Stress)
    {
        if (StressRng(seed_).Chance(options_.raceProbability))
        {
            perturbed_.fetch_add(1, std::memory_order_relaxed);
            Delay();
        }
        return;
    }
    if (std::this_thread::get_id() != hostThread_ || !IsInsideTask() ||
        Scheduler::Current() != host_)
        return;
    if (!hookRng_.Chance(options_.raceProbability))
        return;
    perturbed_.fetch_add(1, std::memory_order_relaxed);
    YieldTask();
}

Result RunInProcess(std::uint64_t seed, const Scenario& scenario, const StressOptions& options)
{
    bool expected = false;
    if (!runBusy.compare_exchange_strong(expected, true))
        throw std::logic_error("TC::Testing: another run is active in this process");
    struct Release
    {
        ~Release() { runBusy.store(false); }
    } release;

    auto run = std::make_unique<RunState>(seed, options);
    scenario(run->GetContext());
    runGeneration.fetch_add(1, std::memory_order_relaxed);
    activeRun.store(run.get(), std::memory_order_release);
    SetRacePointHook(&Hook);
    bool completed = false;
    try
    {
        completed = run->Execute();
    }
    catch (...)
    {
        SetRacePointHook(nullptr);
        activeRun.store(nullptr, std::memory_order_release);
        throw; // Execute throws only before anything started (a scenario error)
    }
    if (!completed)
    {
        Result result = run->Collect(false);
        SetRacePointHook(nullptr);
        activeRun.store(nullptr, std::memory_order_release);
        std::lock_guard guard(graveyardLock);
        Graveyard().push_back(run.release());
        return result;
    }
    run->Finish();
    SetRacePointHook(nullptr);
    activeRun.store(nullptr, std::memory_order_release);
    return run->Collect(true);
}

RunState* ActiveRun() noexcept
{
    return activeRun.load(std::memory_order_relaxed);
}
} // namespace TC::Testing::detail
