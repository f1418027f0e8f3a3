#pragma once
// The test kit's run: RunState owns one seeded run of a scenario (its participants, the
// race-point hook's bookkeeping, the report); RunInProcess and RunForked drive one.

#include <TC/Testing.h>

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace TC::Testing::detail
{
using Clock = std::chrono::steady_clock;

inline std::uint64_t SplitMix(std::uint64_t& state) noexcept
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
    [[noreturn]] void WaitInsideCallback(const SuspendedTaskEntry& outer,
                                         const SuspendedTaskEntry& inner) noexcept;
    void ReportStuckWaiters();

    friend Strands::DetachedTask DriveCoroutine(RunState& run, Scheduler& scheduler,
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

// One run in this process. Claims the process-wide race-point hook for its duration.
Result RunInProcess(std::uint64_t seed, const Scenario& scenario, const StressOptions& options);
// One run in a forked child, which reports its Result through a pipe.
Result RunForked(std::uint64_t seed, const Scenario& scenario, const StressOptions& options);
// The run that owns the race-point hook now, or nullptr.
RunState* ActiveRun() noexcept;
} // namespace TC::Testing::detail
