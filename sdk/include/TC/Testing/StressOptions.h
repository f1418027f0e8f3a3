#pragma once
// StressOptions: how the primitive test kit drives a scenario -- which kinds of waiter it uses,
// how it perturbs the protocol's race points, how it decides that a waiter was lost, and how
// many seeded runs it makes.

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
    Coroutine = 4, // a TC::Task<void> coroutine resumed on the run's scheduler
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
    // One host-pumped Scheduler on the calling thread, picking the next ready participant
    // pseudo-randomly from the seed (SchedulerOptions::shuffleSeed). At the race point between a
    // waiter's failed check and its publication (RacePoint::BeforeOnSuspended) the kit runs a
    // few other ready participants first, so another participant's Put/Set/CountDown lands in
    // the window a missing re-check leaves open. Same seed, same interleaving: a failing seed
    // replays exactly. Thread participants run as tasks in this mode (one thread drives all).
    Deterministic,
    // Real concurrency: a Scheduler with worker threads for tasks and coroutines, OS threads for
    // thread participants, and a seeded random delay (spin, yield or a few microseconds' sleep)
    // at every race point the kernel reports. Finds what needs true parallelism (memory orders,
    // torn claims); a failing seed makes the failure likely again, not certain.
    Stress,
};

// Where a run executes.
enum class Isolation : std::uint8_t
{
    // In this process. A double resume ends the process (checked mode, or the kit itself in
    // other builds, aborts before the kernel could corrupt anything); a lost wake-up leaves the
    // run's scheduler, participants and objects alive forever (they are stuck; destroying them
    // would leave dangling waiters), which costs their memory and, in Stress mode, the
    // scheduler's idle worker threads.
    InProcess,
    // Each run in a forked child process that reports its Result back, so a double resume, a
    // checked-mode abort or a crash becomes a counted outcome and a hang leaks nothing. POSIX
    // only. Fork before the process has started threads of its own where possible (TSan and
    // fork mix badly once the parent has threads).
    Fork,
};

// Everything the kit needs to drive a scenario. Every member has a working default: a
// primitive author usually sets seed, runs and mode, nothing else.
struct StressOptions
{
    // First seed. Run i (0-based) of Stress() uses seed + i. The seed picks each participant's
    // kind, the race-point perturbations and (Deterministic) the scheduling order.
    std::uint64_t seed = 1;
    // How many seeded runs Stress() makes (RunScenario makes one).
    std::size_t runs = 100;
    // Stress() stops starting new runs once this much time has passed (Infinite: no limit);
    // the Summary says how many ran.
    Duration duration = Duration::Infinite();
    Mode mode = Mode::Deterministic;
    Isolation isolation = Isolation::InProcess;
    // The kinds a participant may run as. A participant given as a blocking callable runs as a
    // Task or Thread, one given as a coroutine as a Coroutine, one given both ways as any of the
    // three; the seed picks among those this set allows.
    WaiterKinds waiterKinds = WaiterKinds::All;
    // Probability that a race point is perturbed (Deterministic: other participants run there;
    // Stress: the thread is delayed there).
    double raceProbability = 0.5;
    // Deterministic: at most this many ready items run at one race point.
    unsigned maxInterleave = 3;
    // Deterministic: race points reached while the kit is already running others at one are
    // perturbed only up to this nesting depth.
    unsigned maxNesting = 2;
    // Stress: worker threads of the scheduler that runs tasks and coroutines.
    unsigned workers = 2;
    // Stress: longest delay at a race point; the delays are spins, yields and sleeps below it.
    Duration maxDelay = Duration(std::chrono::microseconds(20));
    // A lost wake-up is reported when participants remain and nothing has happened (no race
    // point reached, no participant finished) for this long. In Deterministic mode the kit knows
    // at once when nothing is queued and no timed wait is pending, and does not wait.
    Duration hangTimeout = Duration(std::chrono::seconds(1));
    // A run whose participants are still busy after this long is reported as a hang too (a
    // livelock, or a scenario too large for its budget).
    Duration runTimeLimit = Duration(std::chrono::seconds(30));
    // Stack size of task participants.
    std::size_t stackSize = 64 * 1024;
    // Stress(): print each failing run's report (the first in full, then one line per seed)
    // to stderr, with the seed that replays it.
    bool printFailures = true;
};
} // namespace TC::Testing
