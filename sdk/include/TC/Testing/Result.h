#pragma once
// Result and Summary: what one seeded run found, and what a series found.

#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace TC::Testing
{
// The outcome of one run. A value type.
struct TC_API Result
{
    std::uint64_t seed = 0; // RunScenario(seed, scenario, options) replays it
    Mode mode = Mode::Deterministic;
    std::size_t participants = 0;
    std::size_t tasks = 0; // participants run as tasks
    std::size_t threads = 0;
    std::size_t coroutines = 0;
    std::size_t finished = 0; // bodies that returned (or threw)
    // Waiters left suspended with nothing to resume them; each in `report`.
    std::size_t lostWakeups = 0;
    // Handles resumed twice (or after a timeout): 0 or 1, Isolation::Fork only.
    std::size_t doubleResumes = 0;
    // Other rule violations that ended a forked run: checked mode's, and in every build a wait
    // begun inside OnSuspended (stopped before it blocks).
    std::size_t ruleViolations = 0;
    // Failed Context::Checks and escaped exceptions.
    std::size_t failedChecks = 0;
    bool hung = false;    // participants left unfinished (lost wake-up or time limit)
    bool crashed = false; // Isolation::Fork: the child died (reason in `report`)
    std::size_t racePoints = 0;
    std::size_t perturbed = 0;       // race points perturbed
    std::vector<std::string> report; // one line per finding

    bool Passed() const noexcept
    {
        return !hung && lostWakeups == 0 && doubleResumes == 0 && ruleViolations == 0 &&
               failedChecks == 0 && !crashed;
    }
    // Verdict, counts, how to replay, report lines.
    std::string Describe() const;
};

// The outcome of Stress().
struct TC_API Summary
{
    std::size_t runs = 0;
    std::size_t passed = 0;
    std::size_t lostWakeupRuns = 0;
    std::size_t doubleResumeRuns = 0; // Fork only
    std::size_t ruleViolationRuns = 0;
    std::size_t failedCheckRuns = 0;
    std::size_t hungRuns = 0;
    std::size_t crashedRuns = 0;
    std::vector<std::uint64_t> failingSeeds; // each replays with RunScenario
    Result firstFailure;

    bool Passed() const noexcept { return runs > 0 && passed == runs; }
    std::size_t Failed() const noexcept { return runs - passed; }
    std::string Describe() const;
};
} // namespace TC::Testing
