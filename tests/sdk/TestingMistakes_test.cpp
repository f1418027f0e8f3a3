// The test kit against the three classic mistakes of a hand-written primitive -- a forgotten
// re-check, a double resume, a wait inside OnSuspended -- each in a small auto-reset signal, in
// deterministic and in stress mode, in every build: each is reported with its rule's name, and
// the correct signal passes the same scenario.

#include "support/StressScale.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/Testing.h>

#include <atomic>
#include <string>
#include <type_traits>

using namespace std::chrono_literals;
using TC::Testing::Context;
using TC::Testing::Mode;
using TC::Testing::StressOptions;

namespace
{
enum class Mistake
{
    None,
    ForgottenRecheck, // publishes the waiter, then does not look at the state again
    UnclaimedResume,  // the re-check resumes the handle it published without taking it back
    WaitInCallback,   // OnSuspended waits (here: for the setter's announcement)
};

// A one-waiter auto-reset signal: Set() lets one Wait() through.
template <Mistake kMistake>
class Signal : private TC::ISuspendCallback
{
public:
    void Set() noexcept
    {
        if constexpr (kMistake == Mistake::WaitInCallback)
            announced_.Set();
        set_.store(true, std::memory_order_seq_cst);
        if (TC::SuspendedTask waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
    }

    void Wait() noexcept
    {
        while (!set_.exchange(false, std::memory_order_acq_rel))
            TC::SuspendTask(this);
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        if constexpr (kMistake == Mistake::WaitInCallback)
            announced_.Wait();
        waiter_.store(task, std::memory_order_seq_cst);
        if constexpr (kMistake == Mistake::ForgottenRecheck)
            return;
        if (!set_.load(std::memory_order_seq_cst))
            return;
        if constexpr (kMistake == Mistake::UnclaimedResume)
            TC::ResumeTask(task); // the handle stays published: a later Set resumes it again
        else if (TC::SuspendedTask waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
    }

    std::atomic<bool> set_{false};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
    // WaitInCallback only: a correct signal the setter sets first.
    struct Nothing
    {
        void Set() noexcept {}
        void Wait() noexcept {}
    };
    std::conditional_t<kMistake == Mistake::WaitInCallback, Signal<Mistake::None>, Nothing>
        announced_;
};

// Two participants hand a turn back and forth `rounds` times, each waiting on its own signal.
template <Mistake kMistake>
void PingPong(Context& ctx)
{
    constexpr int rounds = 20;
    auto& ping = ctx.Make<Signal<kMistake>>();
    auto& pong = ctx.Make<Signal<kMistake>>();
    auto& turns = ctx.Make<std::atomic<int>>(0);
    ctx.Spawn("pinger",
              [&ping, &pong, &turns]
              {
                  for (int i = 0; i < rounds; ++i)
                  {
                      ping.Set();
                      pong.Wait();
                      ++turns;
                  }
              });
    ctx.Spawn("ponger",
              [&ping, &pong]
              {
                  for (int i = 0; i < rounds; ++i)
                  {
                      ping.Wait();
                      pong.Set();
                  }
              });
    ctx.AtEnd([&ctx, &turns] { ctx.Check(turns == rounds, "every turn came back"); });
}

StressOptions Options(Mode mode)
{
    StressOptions options;
    options.mode = mode;
    options.runs = 20;
    options.printFailures = false;
    options.waiterKinds = TC::Testing::WaiterKinds::Task | TC::Testing::WaiterKinds::Thread;
    options.hangTimeout = TC::Duration(mode == Mode::Stress ? 300ms : 1s);
    options.raceProbability = 0.8;
    // Each run in a child: a double resume or a wait inside a callback ends it, and a lost
    // wake-up leaves its stuck threads there, so this process forks with no threads of its own
    // (which ThreadSanitizer requires of a child that starts threads).
    options.isolation = TC::Testing::Isolation::Fork;
    return options;
}

// Both modes, so a test names the one that failed.
const Mode kModes[] = {Mode::Deterministic, Mode::Stress};

const char* Name(Mode mode)
{
    return mode == Mode::Deterministic ? "deterministic" : "stress";
}
} // namespace

TEST_CASE("The correct signal passes the ping-pong in both modes", "[testing][mistakes]")
{
    for (const Mode mode : kModes)
    {
        INFO(Name(mode));
        StressOptions options = Options(mode);
        options.runs = TCStress::Scale<std::size_t>(20, 1.0, 2, 1000);
        const auto summary = TC::Testing::Stress(options, PingPong<Mistake::None>);
        INFO(summary.Describe() << summary.firstFailure.Describe());
        CHECK(summary.Passed());
    }
}

TEST_CASE("A forgotten re-check is reported as a lost wake-up in both modes",
          "[testing][mistakes]")
{
    for (const Mode mode : kModes)
    {
        INFO(Name(mode));
        const auto summary =
            TC::Testing::Stress(Options(mode), PingPong<Mistake::ForgottenRecheck>);
        INFO(summary.Describe() << summary.firstFailure.Describe());
        CHECK(summary.lostWakeupRuns >= 1);
        const std::string report = summary.firstFailure.Describe();
        CHECK(report.find("lost wake-up") != std::string::npos);
        CHECK(report.find("Signal<") != std::string::npos); // the primitive, named
    }
}

TEST_CASE("A double resume is reported by name in both modes", "[testing][mistakes]")
{
    for (const Mode mode : kModes)
    {
        INFO(Name(mode));
        const auto summary =
            TC::Testing::Stress(Options(mode), PingPong<Mistake::UnclaimedResume>);
        INFO(summary.Describe() << summary.firstFailure.Describe());
        CHECK(summary.doubleResumeRuns >= 1);
        CHECK(summary.firstFailure.Describe().find("resumed twice") != std::string::npos);
    }
}

TEST_CASE("A wait inside OnSuspended is reported by name in both modes, in every build",
          "[testing][mistakes]")
{
    for (const Mode mode : kModes)
    {
        INFO(Name(mode));
        const auto summary =
            TC::Testing::Stress(Options(mode), PingPong<Mistake::WaitInCallback>);
        INFO(summary.Describe() << summary.firstFailure.Describe());
        CHECK(summary.ruleViolationRuns >= 1);
        CHECK(summary.firstFailure.Describe().find("wait inside a callback") !=
              std::string::npos);
    }
}
