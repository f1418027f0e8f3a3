#pragma once
// Result and Summary: what one seeded run of the test kit found, and a series of runs with the
// seeds that replay each failure.

#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace TC::Testing
{
// The outcome of one run (RunScenario, or one run of Stress). A value type; destroy it any time.
struct TC_API Result
{
    std::uint64_t seed = 0; // replays the run: RunScenario(seed, scenario, options)
    Mode mode = Mode::Deterministic;
    std::size_t participants = 0;
    std::size_t tasks = 0;      // participants that ran as stackful tasks
    std::size_t threads = 0;    // ... as OS threads (converted when they waited)
    std::size_t coroutines = 0; // ... as coroutines
    std::size_t finished = 0;   // participants whose body returned (or threw)
    // Waiters still suspended once nothing could resume them; each listed in `report`.
    std::size_t lostWakeups = 0;
    // Handles resumed twice (or after a timeout): 0 or 1, counted only under Isolation::Fork.
    std::size_t doubleResumes = 0;
    // Other rule violations that ended a forked run (the report names the rule): checked mode's,
    // and in every build a wait begun inside OnSuspended, which the kit stops before it blocks.
    std::size_t ruleViolations = 0;
    // Context::Check failures and exceptions that escaped a participant.
    std::size_t failedChecks = 0;
    bool hung = false;    // participants were left unfinished (lost wake-ups, or a time limit)
    bool crashed = false; // Isolation::Fork: the child died for a reason named in `report`
    std::size_t racePoints = 0;      // race points the kernel reported during the run
    std::size_t perturbed = 0;       // ... of which the kit delayed or interleaved
    std::vector<std::string> report; // one line per finding, for people

    bool Passed() const noexcept
    {
        return !hung && lostWakeups == 0 && doubleResumes == 0 && ruleViolations == 0 &&
               failedChecks == 0 && !crashed;
    }
    // The verdict, the counts, the seed and how to replay it, and the report lines.
    std::string Describe() const;
};

// The outcome of Stress(): counts over all runs and the seeds that failed.
struct TC_API Summary
{
    std::size_t runs = 0; // runs made (fewer than StressOptions::runs if duration ran out)
    std::size_t passed = 0;
    std::size_t lostWakeupRuns = 0;   // runs with at least one lost wake-up
    std::size_t doubleResumeRuns = 0; // runs that ended in a double resume (Fork only)
    std::size_t ruleViolationRuns = 0;
    std::size_t failedCheckRuns = 0;
    std::size_t hungRuns = 0; // runs left unfinished for any reason
    std::size_t crashedRuns = 0;
    std::vector<std::uint64_t> failingSeeds; // each replays with RunScenario
    Result firstFailure;                     // the first failing run, in full

    bool Passed() const noexcept { return runs > 0 && passed == runs; }
    std::size_t Failed() const noexcept { return runs - passed; }
    // Counts and failing seeds, for people.
    std::string Describe() const;
};
} // namespace TC::Testing
