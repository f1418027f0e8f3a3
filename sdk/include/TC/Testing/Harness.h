#pragma once
// Test kit entry points: RunScenario (one seeded run), Stress (many), RaceWindow (a race point).
//   TC::Testing::Result result = TC::Testing::RunScenario(seed, scenario, options);

#include <TC/Testing/Context.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstdint>
#include <functional>

namespace TC::Testing
{
// Creates a run's shared objects and spawns its participants.
using Scenario = std::function<void(Context&)>;

// Runs `scenario` once with `seed` (options.seed/runs ignored) until every participant finished
// or a hang was found. A failing seed replays (exactly in Deterministic mode).
/// - From a plain thread: not a task, coroutine or scheduler thread.
/// - One run per process at a time: a concurrent one throws std::logic_error.
TC_API Result RunScenario(std::uint64_t seed, const Scenario& scenario,
                          const StressOptions& options = {});

// RunScenario for seeds options.seed, +1, ... (options.runs, or until options.duration); prints
// failing seeds to stderr if options.printFailures. RunScenario's rules hold.
TC_API Summary Stress(const StressOptions& options, const Scenario& scenario);

// A race point inside a primitive (say, between publishing and re-checking); any thread, also
// callbacks. Outside a run a relaxed load; Stress mode may delay; Deterministic mode may yield a
// task participant there.
TC_API void RaceWindow() noexcept;
} // namespace TC::Testing
