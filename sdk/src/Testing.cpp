// The primitive test kit: seeded runs, the race-point hook that perturbs them, lost wake-up and
// double resume detection, and forked isolation.

#include <TC/Testing.h>

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <typeinfo>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace TC::Testing
{
namespace
{
using Clock = std::chrono::steady_clock;

std::uint64_t SplitMix(std::uint64_t& state) noexcept
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// xorshift64*: small, fast and good enough to choose delays and interleavings.
struct Rng
{
    std::uint64_t state = 1;

    void Seed(std::uint64_t seed) noexcept { state = SplitMix(seed) | 1; }
    std::uint64_t Next() noexcept
    {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    std::uint64_t Below(std::uint64_t n) noexcept { return n ? Next() % n : 0; }
    bool Chance(double probability) noexcept
    {
        return static_cast<double>(Next() >> 11) * 0x1.0p-53 < probability;
    }
};

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

const char* ModeName(Mode mode) noexcept
{
    return mode == Mode::Deterministic ? "deterministic" : "stress";
}

double Seconds(Clock::duration d) noexcept
{
    return std::chrono::duration<double>(d).count();
}

struct Participant
{
    std::string name;
    BlockingBody blocking;
    CoroutineBody coroutine;
    WaiterKind kind = WaiterKind::Task;
};

// What the kit knows about a waiter between BeforeOnSuspended and BeforeResume.
struct Tracked
{
    Clock::time_point since;
    bool timed = false; // a timed wait: a timeout may end it without a BeforeResume
};
} // namespace

namespace detail
{
// Everything one run owns. A run that hung is never destroyed (stuck waiters refer to it).
class RunState
{
public:
    RunState(std::uint64_t seed, const StressOptions& options) : seed_(seed), options_(options)
    {
        std::uint64_t state = seed;
        scenarioRng_.Seed(SplitMix(state));
        kindRng_.Seed(SplitMix(state));
        hookRng_.Seed(SplitMix(state));
        shuffleSeed_ = SplitMix(state) | 1;
    }

    Context& GetContext() noexcept { return context_; }
    std::uint64_t Seed() const noexcept { return seed_; }
    Mode RunMode() const noexcept { return options_.mode; }
    const StressOptions& Options() const noexcept { return options_; }

    // ---- what the scenario function calls (through Context) ----
    void Own(std::shared_ptr<void> object) { objects_.push_back(std::move(object)); }
    void Add(std::string name, BlockingBody blocking, CoroutineBody coroutine)
    {
        if (started_)
            throw std::logic_error("TC::Testing::Context: Spawn after the participants started");
        if (!blocking && !coroutine)
            throw std::invalid_argument("TC::Testing::Context::Spawn: participant '" + name +
                                        "' has no body");
        participants_.push_back(
            Participant{std::move(name), std::move(blocking), std::move(coroutine)});
    }
    void AtEnd(std::function<void()> check) { atEnd_.push_back(std::move(check)); }
    bool Check(bool condition, std::string_view what)
    {
        if (condition)
            return true;
        std::lock_guard guard(reportLock_);
        ++failedChecks_;
        report_.push_back("check failed: " + std::string(what));
        return false;
    }
    std::uint64_t Random() noexcept
    {
        std::lock_guard guard(randomLock_);
        return scenarioRng_.Next();
    }

    // ---- the run ----
    // Starts every participant and waits until all finished (true) or the run hung (false).
    bool Execute();
    // Joins what ran, destroys the scheduler, runs the AtEnd checks. Only after Execute()
    // returned true.
    void Finish();
    Result Collect(bool completed);

    // The race-point hook, for the run that is active.
    void OnRacePoint(RacePoint point, SuspendedTask task) noexcept;
    void OnRaceWindow() noexcept;

private:
    void AssignKinds();
    void StartParticipants(Scheduler& scheduler);
    void Perturb(RacePoint point) noexcept;
    void Delay() noexcept;
    void ParticipantDone() noexcept
    {
        finished_.fetch_add(1, std::memory_order_acq_rel);
        activity_.fetch_add(1, std::memory_order_relaxed);
    }
    void Fail(const std::string& what)
    {
        std::lock_guard guard(reportLock_);
        ++failedChecks_;
        report_.push_back(what);
    }
    bool AnyTimedWaiter()
    {
        std::lock_guard guard(trackLock_);
        return std::any_of(suspended_.begin(), suspended_.end(),
                           [](const auto& item) { return item.second.timed; });
    }
    [[noreturn]] void DoubleResume(const SuspendedTaskEntry& entry) noexcept;
    void ReportStuckWaiters();

    friend DetachedTask DriveCoroutine(RunState& run, Scheduler& scheduler,
                                       Participant& participant);

    const std::uint64_t seed_;
    const StressOptions options_;
    Context context_{*this};
    Rng scenarioRng_;
    std::mutex randomLock_;
    Rng kindRng_;
    Rng hookRng_; // Deterministic: used on the host thread only
    std::uint64_t shuffleSeed_ = 1;

    std::deque<Participant> participants_; // deque: names stay put (task names point into them)
    std::vector<std::shared_ptr<void>> objects_;
    std::vector<std::function<void()>> atEnd_;
    bool started_ = false;

    std::mutex reportLock_;
    std::vector<std::string> report_;
    std::size_t failedChecks_ = 0;
    std::size_t lostWakeups_ = 0;
    bool hung_ = false;

    std::atomic<std::size_t> finished_{0};
    std::atomic<std::uint64_t> activity_{0};
    std::atomic<std::size_t> racePoints_{0};
    std::atomic<std::size_t> perturbed_{0};

    std::mutex trackLock_;
    std::unordered_map<SuspendedTaskEntry*, Tracked> suspended_;
    std::unordered_set<SuspendedTaskEntry*> seen_;

    std::unique_ptr<Scheduler> scheduler_;
    Scheduler* host_ = nullptr; // Deterministic: the host-pumped scheduler
    std::thread::id hostThread_;
    std::vector<JoinHandle> tasks_;
    std::vector<std::thread> threads_;
    Clock::time_point start_;
};
} // namespace detail

namespace
{
using detail::RunState;

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

namespace detail
{
DetachedTask DriveCoroutine(RunState& run, Scheduler& scheduler, Participant& participant)
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

void RunState::OnRacePoint(RacePoint point, SuspendedTask task) noexcept
{
    racePoints_.fetch_add(1, std::memory_order_relaxed);
    activity_.fetch_add(1, std::memory_order_relaxed);
    SuspendedTaskEntry* entry = task.Entry();
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
} // namespace detail

// ---- Context ----

std::uint64_t Context::Seed() const noexcept
{
    return run_.Seed();
}

Mode Context::RunMode() const noexcept
{
    return run_.RunMode();
}

void Context::Own(std::shared_ptr<void> object)
{
    run_.Own(std::move(object));
}

void Context::Spawn(std::string name, BlockingBody body)
{
    run_.Add(std::move(name), std::move(body), {});
}

void Context::Spawn(std::string name, BlockingBody body, CoroutineBody coroutine)
{
    run_.Add(std::move(name), std::move(body), std::move(coroutine));
}

void Context::SpawnCoroutine(std::string name, CoroutineBody coroutine)
{
    run_.Add(std::move(name), {}, std::move(coroutine));
}

void Context::AtEnd(std::function<void()> check)
{
    run_.AtEnd(std::move(check));
}

bool Context::Check(bool condition, std::string_view what)
{
    return run_.Check(condition, what);
}

std::uint64_t Context::Random() noexcept
{
    return run_.Random();
}

std::size_t Context::Pick(std::size_t n) noexcept
{
    return n ? static_cast<std::size_t>(run_.Random() % n) : 0;
}

// ---- runs ----

namespace
{
// One run in this process. Claims the process-wide hook for its duration.
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
} // namespace

// ---- forked runs: the child reports its Result through a pipe, one field per line ----

namespace
{
std::string Serialize(const Result& r)
{
    std::ostringstream out;
    out << "participants " << r.participants << "\ntasks " << r.tasks << "\nthreads " << r.threads
        << "\ncoroutines " << r.coroutines << "\nfinished " << r.finished << "\nlost "
        << r.lostWakeups << "\ndouble " << r.doubleResumes << "\nrules " << r.ruleViolations
        << "\nchecks " << r.failedChecks << "\nhung " << r.hung << "\ncrashed " << r.crashed
        << "\nracepoints " << r.racePoints << "\nperturbed " << r.perturbed << "\n";
    for (std::string line : r.report)
    {
        std::replace(line.begin(), line.end(), '\n', ' ');
        out << "report " << line << "\n";
    }
    out << "end\n";
    return out.str();
}

bool Deserialize(const std::string& text, Result& r)
{
    std::istringstream in(text);
    std::string key;
    while (in >> key)
    {
        if (key == "end")
            return true;
        if (key == "report")
        {
            std::string line;
            std::getline(in, line);
            r.report.push_back(line.empty() ? line : line.substr(1));
            continue;
        }
        std::size_t value = 0;
        in >> value;
        if (key == "participants")
            r.participants = value;
        else if (key == "tasks")
            r.tasks = value;
        else if (key == "threads")
            r.threads = value;
        else if (key == "coroutines")
            r.coroutines = value;
        else if (key == "finished")
            r.finished = value;
        else if (key == "lost")
            r.lostWakeups = value;
        else if (key == "double")
            r.doubleResumes = value;
        else if (key == "rules")
            r.ruleViolations = value;
        else if (key == "checks")
            r.failedChecks = value;
        else if (key == "hung")
            r.hung = value != 0;
        else if (key == "crashed")
            r.crashed = value != 0;
        else if (key == "racepoints")
            r.racePoints = value;
        else if (key == "perturbed")
            r.perturbed = value;
    }
    return false;
}

void WriteAll(int fd, const std::string& text) noexcept
{
    std::size_t done = 0;
    while (done < text.size())
    {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n <= 0)
            return;
        done += static_cast<std::size_t>(n);
    }
}

std::string ReadAll(int fd)
{
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    return text;
}

Result RunForked(std::uint64_t seed, const Scenario& scenario, const StressOptions& options)
{
    int errorPipe[2];
    int resultPipe[2];
    if (pipe(errorPipe) != 0)
        throw std::runtime_error("TC::Testing: pipe failed");
    if (pipe(resultPipe) != 0)
    {
        close(errorPipe[0]);
        close(errorPipe[1]);
        throw std::runtime_error("TC::Testing: pipe failed");
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    if (child < 0)
        throw std::runtime_error("TC::Testing: fork failed");
    if (child == 0)
    {
        close(errorPipe[0]);
        close(resultPipe[0]);
        dup2(errorPipe[1], STDERR_FILENO);
        // A test runner's crash handlers are not async-signal-safe: the child dies plainly.
        for (int signalNumber : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE})
            std::signal(signalNumber, SIG_DFL);
        Result result;
        try
        {
            result = RunInProcess(seed, scenario, options);
        }
        catch (const std::exception& error)
        {
            result.seed = seed;
            result.failedChecks = 1;
            result.report.push_back(std::string("the scenario threw: ") + error.what());
        }
        WriteAll(resultPipe[1], Serialize(result));
        std::fflush(stderr);
        _exit(0);
    }
    close(errorPipe[1]);
    close(resultPipe[1]);
    const std::string errors = ReadAll(errorPipe[0]);
    const std::string reported = ReadAll(resultPipe[0]);
    close(errorPipe[0]);
    close(resultPipe[0]);
    int status = 0;
    waitpid(child, &status, 0);

    Result result;
    const bool exitedCleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!(exitedCleanly && Deserialize(reported, result)))
    {
        result = Result{};
        if (errors.find("handle resumed twice") != std::string::npos)
            result.doubleResumes = 1;
        else if (errors.find("TC checked mode:") != std::string::npos)
            result.ruleViolations = 1;
        else
            result.crashed = true;
        result.report.push_back(
            WIFSIGNALED(status)
                ? "the child process died of signal " + std::to_string(WTERMSIG(status))
                : "the child process exited with status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1));
        std::istringstream lines(errors);
        std::size_t kept = 0;
        for (std::string line; std::getline(lines, line) && kept < 20; ++kept)
            result.report.push_back("  stderr: " + line);
    }
    result.seed = seed;
    result.mode = options.mode;
    return result;
}
} // namespace

Result RunScenario(std::uint64_t seed, const Scenario& scenario, const StressOptions& options)
{
    if (options.isolation == Isolation::Fork)
        return RunForked(seed, scenario, options);
    return RunInProcess(seed, scenario, options);
}

Summary Stress(const StressOptions& options, const Scenario& scenario)
{
    Summary summary;
    const auto start = Clock::now();
    const auto budget = std::chrono::nanoseconds(options.duration.Nanoseconds());
    for (std::size_t i = 0; i < options.runs; ++i)
    {
        if (!options.duration.IsInfinite() && summary.runs > 0 && Clock::now() - start >= budget)
            break;
        const Result result = RunScenario(options.seed + i, scenario, options);
        ++summary.runs;
        if (result.Passed())
        {
            ++summary.passed;
            continue;
        }
        summary.lostWakeupRuns += result.lostWakeups != 0;
        summary.doubleResumeRuns += result.doubleResumes != 0;
        summary.ruleViolationRuns += result.ruleViolations != 0;
        summary.failedCheckRuns += result.failedChecks != 0;
        summary.hungRuns += result.hung;
        summary.crashedRuns += result.crashed;
        if (summary.failingSeeds.empty())
        {
            summary.firstFailure = result;
            if (options.printFailures)
                std::fprintf(stderr, "%s", result.Describe().c_str());
        }
        else if (options.printFailures)
        {
            std::fprintf(
                stderr,
                "TC::Testing: seed %llu failed too (%zu lost wake-up(s), %zu failed check(s)%s)\n",
                static_cast<unsigned long long>(result.seed), result.lostWakeups,
                result.failedChecks, result.doubleResumes ? ", double resume" : "");
        }
        summary.failingSeeds.push_back(result.seed);
    }
    return summary;
}

void RaceWindow() noexcept
{
    if (RunState* run = activeRun.load(std::memory_order_relaxed)) [[unlikely]]
        run->OnRaceWindow();
}

std::string Result::Describe() const
{
    std::ostringstream out;
    out << "TC::Testing: seed " << seed << " (" << ModeName(mode) << "): ";
    if (Passed())
        out << "passed";
    else
    {
        out << "FAILED:";
        if (lostWakeups)
            out << " " << lostWakeups << " lost wake-up(s);";
        if (doubleResumes)
            out << " double resume;";
        if (ruleViolations)
            out << " checked-mode rule violation;";
        if (failedChecks)
            out << " " << failedChecks << " failed check(s);";
        if (hung && !lostWakeups)
            out << " hung;";
        if (crashed)
            out << " crashed;";
    }
    out << "\n  participants: " << participants << " (" << tasks << " task(s), " << threads
        << " thread(s), " << coroutines << " coroutine(s)), " << finished
        << " finished; race points " << racePoints << ", perturbed " << perturbed << "\n";
    if (!Passed())
        out << "  replay: TC::Testing::RunScenario(" << seed << ", scenario, options) with mode "
            << ModeName(mode) << "\n";
    for (const std::string& line : report)
        out << "  " << line << "\n";
    return out.str();
}

std::string Summary::Describe() const
{
    std::ostringstream out;
    out << "TC::Testing: " << runs << " run(s), " << passed << " passed, " << Failed() << " failed";
    if (Failed())
    {
        out << " (lost wake-ups in " << lostWakeupRuns << ", double resumes in " << doubleResumeRuns
            << ", rule violations in " << ruleViolationRuns << ", failed checks in "
            << failedCheckRuns << ", hung " << hungRuns << ", crashed " << crashedRuns
            << "); failing seeds:";
        for (std::size_t i = 0; i < failingSeeds.size() && i < 20; ++i)
            out << " " << failingSeeds[i];
        if (failingSeeds.size() > 20)
            out << " ...";
    }
    out << "\n";
    return out.str();
}
} // namespace TC::Testing
