#pragma once
// Test kit entry points: RunScenario, Stress, RaceWindow.
//   TC::Testing::Result result = TC::Testing::RunScenario(seed, scenario, options);

#include <TC/Testing/Context.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstdint>
#include <functional>

namespace TC::Testing
{
// Sets up one run.
using Scenario = std::function<void(Context&)>;

// Runs `scenario` once with `seed` (options.seed/runs ignored) until all participants finished
// or a hang was found.
/// - From a plain thread: not a task, coroutine or scheduler thread.
/// - One run per process at a time: a concurrent one throws std::logic_error.
TC_API Result RunScenario(std::uint64_t seed, const Scenario& scenario,
                          const StressOptions& options = {});

// RunScenario for seeds options.seed, +1, ... (options.runs, or until options.duration); prints
// failing seeds to stderr if options.printFailures. RunScenario's rules hold.
TC_API Summary Stress(const StressOptions& options, const Scenario& scenario);

// A race point in a primitive (say, between publishing and re-checking); any thread. Outside a
// run a relaxed load; Stress mode may delay; Deterministic mode may yield a task participant.
// Also from callbacks.
TC_API void RaceWindow() noexcept;
} // namespace TC::Testing
