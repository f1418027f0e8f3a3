// The test kit's public surface: Context, RunScenario, Stress and the result descriptions.

#include "RunState.h"

#include <cstdio>
#include <sstream>

namespace TC::Testing
{
namespace
{
using detail::Clock;

const char* ModeName(Mode mode) noexcept
{
    return mode == Mode::Deterministic ? "deterministic" : "stress";
}
} // namespace

// ---- Context ----

std::uint64_t Context::Seed() const noexcept
{
    return run_.Seed();
}

Mode Context::RunMode() const noexcept
{
    return run_.RunMode();
}

void Context::Own(std::shared_ptr<void> object)
{
    run_.Own(std::move(object));
}

void Context::Spawn(std::string name, BlockingBody body)
{
    run_.Add(std::move(name), std::move(body), {});
}

void Context::Spawn(std::string name, BlockingBody body, CoroutineBody coroutine)
{
    run_.Add(std::move(name), std::move(body), std::move(coroutine));
}

void Context::SpawnCoroutine(std::string name, CoroutineBody coroutine)
{
    run_.Add(std::move(name), {}, std::move(coroutine));
}

void Context::AtEnd(std::function<void()> check)
{
    run_.AtEnd(std::move(check));
}

bool Context::Check(bool condition, std::string_view what)
{
    return run_.Check(condition, what);
}

std::uint64_t Context::Random() noexcept
{
    return run_.Random();
}

std::size_t Context::Pick(std::size_t n) noexcept
{
    return n ? static_cast<std::size_t>(run_.Random() % n) : 0;
}

Result RunScenario(std::uint64_t seed, const Scenario& scenario, const StressOptions& options)
{
    if (options.isolation == Isolation::Fork)
        return detail::RunForked(seed, scenario, options);
    return detail::RunInProcess(seed, scenario, options);
}

Summary Stress(const StressOptions& options, const Scenario& scenario)
{
    Summary summary;
    const auto start = Clock::now();
    const auto budget = std::chrono::nanoseconds(options.duration.Nanoseconds());
    for (std::size_t i = 0; i < options.runs; ++i)
    {
        if (!options.duration.IsInfinite() && summary.runs > 0 && Clock::now() - start >= budget)
            break;
        const Result result = RunScenario(options.seed + i, scenario, options);
        ++summary.runs;
        if (result.Passed())
        {
            ++summary.passed;
            continue;
        }
        summary.lostWakeupRuns += result.lostWakeups != 0;
        summary.doubleResumeRuns += result.doubleResumes != 0;
        summary.ruleViolationRuns += result.ruleViolations != 0;
        summary.failedCheckRuns += result.failedChecks != 0;
        summary.hungRuns += result.hung;
        summary.crashedRuns += result.crashed;
        if (summary.failingSeeds.empty())
        {
            summary.firstFailure = result;
            if (options.printFailures)
                std::fprintf(stderr, "%s", result.Describe().c_str());
        }
        else if (options.printFailures)
        {
            std::fprintf(
                stderr,
                "TC::Testing: seed %llu failed too (%zu lost wake-up(s), %zu failed check(s)%s)\n",
                static_cast<unsigned long long>(result.seed), result.lostWakeups,
                result.failedChecks, result.doubleResumes ? ", double resume" : "");
        }
        summary.failingSeeds.push_back(result.seed);
    }
    return summary;
}

void RaceWindow() noexcept
{
    if (detail::RunState* run = detail::ActiveRun()) [[unlikely]]
        run->OnRaceWindow();
}

std::string Result::Describe() const
{
    std::ostringstream out;
    out << "TC::Testing: seed " << seed << " (" << ModeName(mode) << "): ";
    if (Passed())
        out << "passed";
    else
    {
        out << "FAILED:";
        if (lostWakeups)
            out << " " << lostWakeups << " lost wake-up(s);";
        if (doubleResumes)
            out << " double resume;";
        if (ruleViolations)
            out << " checked-mode rule violation;";
        if (failedChecks)
            out << " " << failedChecks << " failed check(s);";
        if (hung && !lostWakeups)
            out << " hung;";
        if (crashed)
            out << " crashed;";
    }
    out << "\n  participants: " << participants << " (" << tasks << " task(s), " << threads
        << " thread(s), " << coroutines << " coroutine(s)), " << finished
        << " finished; race points " << racePoints << ", perturbed " << perturbed << "\n";
    if (!Passed())
        out << "  replay: TC::Testing::RunScenario(" << seed << ", scenario, options) with mode "
            << ModeName(mode) << "\n";
    for (const std::string& line : report)
        out << "  " << line << "\n";
    return out.str();
}

std::string Summary::Describe() const
{
    std::ostringstream out;
    out << "TC::Testing: " << runs << " run(s), " << passed << " passed, " << Failed() << " failed";
    if (Failed())
    {
        out << " (lost wake-ups in " << lostWakeupRuns << ", double resumes in " << doubleResumeRuns
            << ", rule violations in " << ruleViolationRuns << ", failed checks in "
            << failedCheckRuns << ", hung " << hungRuns << ", crashed " << crashedRuns
            << "); failing seeds:";
        for (std::size_t i = 0; i < failingSeeds.size() && i < 20; ++i)
            out << " " << failingSeeds[i];
        if (failingSeeds.size() > 20)
            out << " ...";
    }
    out << "\n";
    return out.str();
}
} // namespace TC::Testing
