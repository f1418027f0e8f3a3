#pragma once
// The primitive test kit's entry points: RunScenario (one seeded run), Stress (a series of
// seeded runs) and RaceWindow (a race point a primitive marks inside its own code).
//   TC::Testing::Result result = TC::Testing::RunScenario(seed, scenario, options);

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

// Runs `scenario` once with `seed` (options.seed/runs ignored); blocks until every participant
// finished or a hang was found. A failing seed replays (exactly in Deterministic mode).
/// - From an ordinary thread: not a task, coroutine or scheduler thread.
/// - One run per process at a time: a concurrent second run throws std::logic_error.
TC_API Result RunScenario(std::uint64_t seed, const Scenario& scenario,
                          const StressOptions& options = {});

// Runs `scenario` for seeds options.seed, +1, ... (options.runs, or until options.duration) and
// sums up; prints failing seeds to stderr unless options.printFailures is false. As RunScenario.
TC_API Summary Stress(const StressOptions& options, const Scenario& scenario);

// A race point inside the primitive (between publishing and re-checking, say); any thread, also
// callbacks. Outside a run one relaxed load; in Stress mode it may delay, in Deterministic mode a
// task participant may yield there (elsewhere nothing).
TC_API void RaceWindow() noexcept;
} // namespace TC::Testing
