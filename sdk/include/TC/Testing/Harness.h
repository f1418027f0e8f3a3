#pragma once
// The primitive test kit's entry points: RunScenario (one seeded run), Stress (a series of
// seeded runs) and RaceWindow (a race point a primitive marks inside its own code).

#include <TC/Testing/Context.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstdint>
#include <functional>

namespace TC::Testing
{
// Sets the scene of one run: creates the shared objects and spawns the participants.
using Scenario = std::function<void(Context&)>;

// Runs `scenario` once with `seed` (options.seed and options.runs are ignored) and reports what
// it found. Blocks the calling thread until every participant finished or a hang was detected.
// Call it from an ordinary thread (a test's main thread): not from a task, a coroutine or a
// scheduler thread, and not concurrently with another run in this process (the race-point hook
// is process-wide; a second concurrent run throws std::logic_error). A failing seed replays:
// exactly in Mode::Deterministic, probably in Mode::Stress.
TC_API Result RunScenario(std::uint64_t seed, const Scenario& scenario,
                          const StressOptions& options = {});

// Runs `scenario` for the seeds options.seed, options.seed + 1, ... (options.runs of them, or
// fewer when options.duration runs out) and sums up. Prints failing seeds to stderr unless
// options.printFailures is false. Same calling rules as RunScenario.
TC_API Summary Stress(const StressOptions& options, const Scenario& scenario);

// A race point of the primitive's own, for windows the kernel cannot see: between publishing a
// waiter and re-checking inside OnSuspended, or between a state change and the waiter exchange
// in a Put. Outside a run it costs one relaxed load and does nothing. During a Stress-mode run
// it may delay the thread; during a Deterministic run, called from a task participant, it may
// yield to other ready participants (elsewhere -- in a callback, a coroutine -- it does nothing,
// since those must not yield). Callable from anywhere, callbacks included.
TC_API void RaceWindow() noexcept;
} // namespace TC::Testing
