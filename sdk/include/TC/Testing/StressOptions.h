#pragma once
// StressOptions: how the primitive test kit drives a scenario: waiter kinds, race-point
// perturbation, lost-wake-up detection and the number of seeded runs.
//   TC::Testing::StressOptions options;
//   options.runs = 1000;  options.mode = TC::Testing::Mode::Stress;

#include <TC/Duration.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace TC::Testing
{
// What runs a participant of a scenario.
enum class WaiterKind : std::uint8_t
{
    Task = 1,      // a stackful task on the run's scheduler
    Thread = 2,    // an OS thread of its own, a converted thread when it waits
    Coroutine = 4, // a TC::Strands::Task<void> coroutine resumed on the run's scheduler
};

// A set of WaiterKind values: StressOptions::waiterKinds.
enum class WaiterKinds : std::uint8_t
{
    None = 0,
    Task = 1,
    Thread = 2,
    Coroutine = 4,
    All = 7,
};

constexpr WaiterKinds operator|(WaiterKinds a, WaiterKinds b) noexcept
{
    return static_cast<WaiterKinds>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}

constexpr bool Contains(WaiterKinds set, WaiterKind kind) noexcept
{
    return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(kind)) != 0;
}

// How a run executes its participants.
enum class Mode : std::uint8_t
{
    // One host-pumped Scheduler on the calling thread, picking ready participants from the seed;
    // at BeforeOnSuspended other participants run first. Replays exactly; threads run as tasks.
    Deterministic,
    // Worker threads, OS threads and seeded random delays at every race point: finds memory-order
    // bugs; a failing seed makes the failure likely again, not certain.
    Stress,
};

// Where a run executes.
enum class Isolation : std::uint8_t
{
    // In this process: a double resume aborts it; a lost wake-up leaks the run's scheduler,
    // participants and objects (and Stress-mode idle workers).
    InProcess,
    // Each run in a forked child reporting back: aborts and crashes become outcomes, hangs leak
    // nothing. POSIX only; fork before starting threads (TSan).
    Fork,
};

// Everything the kit needs; every member has a working default (set seed, runs and mode).
struct StressOptions
{
    // First seed; run i uses seed + i. It picks kinds, perturbations and (Deterministic) order.
    std::uint64_t seed = 1;
    // How many seeded runs Stress() makes (RunScenario makes one).
    std::size_t runs = 100;
    // Stress() starts no new run after this long (Infinite: no limit).
    Duration duration = Duration::Infinite();
    Mode mode = Mode::Deterministic;
    Isolation isolation = Isolation::InProcess;
    // Kinds a participant may run as: blocking callables Task/Thread, coroutines Coroutine, both
    // forms any; the seed picks among those allowed.
    WaiterKinds waiterKinds = WaiterKinds::All;
    // Probability a race point is perturbed (Deterministic: others run; Stress: a delay).
    double raceProbability = 0.5;
    // Deterministic: at most this many ready items run at one race point.
    unsigned maxInterleave = 3;
    // Deterministic: nesting depth up to which race points inside a perturbation are perturbed.
    unsigned maxNesting = 2;
    // Stress: worker threads of the scheduler that runs tasks and coroutines.
    unsigned workers = 2;
    // Stress: longest delay at a race point; the delays are spins, yields and sleeps below it.
    Duration maxDelay = Duration(std::chrono::microseconds(20));
    // A lost wake-up is reported after this long without progress (Deterministic: at once when
    // nothing is queued or timed).
    Duration hangTimeout = Duration(std::chrono::seconds(1));
    // A run still busy after this long is reported as a hang (livelock, or too large a scenario).
    Duration runTimeLimit = Duration(std::chrono::seconds(30));
    // Stack size of task participants.
    std::size_t stackSize = 64 * 1024;
    // Stress(): print failing runs (the first in full, then a line per seed) to stderr.
    bool printFailures = true;
};
} // namespace TC::Testing
