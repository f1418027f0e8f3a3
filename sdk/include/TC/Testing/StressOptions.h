#pragma once
// StressOptions: how the test kit drives a scenario.
//   TC::Testing::StressOptions options;
//   options.runs = 1000;  options.mode = TC::Testing::Mode::Stress;

#include <TC/Duration.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace TC::Testing
{
// What runs a participant.
enum class WaiterKind : std::uint8_t
{
    Task = 1,      // a stackful task on the run's scheduler
    Thread = 2,    // an OS thread of its own
    Coroutine = 4, // a TC::Strands::Task<void> on the run's scheduler
};

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
    // One host-pumped Scheduler, order from the seed; replays exactly. Threads run as tasks; at
    // BeforeOnSuspended others run first.
    Deterministic,
    // Workers, threads, seeded delays at race points; a failing seed replays likely, not surely.
    Stress,
};

// Where a run executes.
enum class Isolation : std::uint8_t
{
    // A double resume aborts the process; a lost wake-up leaks the run's scheduler,
    // participants, objects (and Stress-mode workers).
    InProcess,
    // A forked child per run: aborts and crashes become outcomes, hangs leak nothing. POSIX; fork
    // before starting threads (TSan).
    Fork,
};

// Every member has a working default.
struct StressOptions
{
    // Run i uses seed + i: it picks kinds, perturbations and (Deterministic) order.
    std::uint64_t seed = 1;
    // Runs Stress() makes.
    std::size_t runs = 100;
    // Stress() starts no run after this long.
    Duration duration = Duration::Infinite();
    Mode mode = Mode::Deterministic;
    Isolation isolation = Isolation::InProcess;
    // Kinds the seed picks from (Task/Thread: blocking bodies; Coroutine: coroutine ones).
    WaiterKinds waiterKinds = WaiterKinds::All;
    // Probability a race point is perturbed.
    double raceProbability = 0.5;
    // Deterministic: at most this many ready items run at one race point.
    unsigned maxInterleave = 3;
    // Deterministic: how deep race points inside a perturbation are perturbed.
    unsigned maxNesting = 2;
    // Stress: scheduler workers.
    unsigned workers = 2;
    // Stress: longest delay at a race point.
    Duration maxDelay = Duration(std::chrono::microseconds(20));
    // Lost wake-up reported after this long without progress (Deterministic: at once if
    // nothing is queued or timed).
    Duration hangTimeout = Duration(std::chrono::seconds(1));
    // A run still busy after this long is reported as a hang.
    Duration runTimeLimit = Duration(std::chrono::seconds(30));
    std::size_t stackSize = 64 * 1024;
    // Stress(): print failing runs to stderr (the first in full, then their seeds).
    bool printFailures = true;
};
} // namespace TC::Testing
