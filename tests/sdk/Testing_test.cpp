// The primitive test kit (<TC/Testing.h>) against the guide's primitives: the correct Mailbox
// and Latch pass every seeded run, a Mailbox without its re-check is caught, a double resume is
// reported, and a failing seed replays.

#include "GuidePrimitives.h"
#include "support/StressScale.h"

#include <catch2/catch.hpp>

#include <TC/Testing.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace std::chrono_literals;
using TC::Testing::Context;
using TC::Testing::Mode;
using TC::Testing::StressOptions;
using TC::Testing::WaiterKinds;

namespace
{
// TC_STRESS_SCALE (tests/support/StressScale.h) scales the Stress-mode run counts.
std::size_t Scaled(std::size_t runs)
{
    return TCStress::Scale<std::size_t>(runs, 1.0, 2, std::size_t{1} << 40);
}

// Two request/reply pairs, each client asking `rounds` questions, from every kind of waiter.
template <class Box>
void RequestReply(Context& ctx, int pairs = 2, int rounds = 10)
{
    for (int pair = 0; pair < pairs; ++pair)
    {
        auto& requests = ctx.Make<Box>();
        auto& replies = ctx.Make<Box>();
        auto& sum = ctx.Make<std::atomic<long>>(0);
        ctx.Spawn(
            "service", [&requests, &replies] { Guide::Serve(requests, replies); },
            [&requests, &replies]() -> TC::Strands::Task<void>
            {
                for (int request; (request = co_await requests.TakeAsync()) > 0;)
                    replies.Put(request * 2);
            });
        ctx.Spawn(
            "client",
            [&requests, &replies, &sum, rounds]
            {
                long total = 0;
                for (int i = 1; i <= rounds; ++i)
                    total += Guide::Ask(requests, replies, i);
                requests.Put(-1);
                sum = total;
            },
            [&requests, &replies, &sum, rounds]() -> TC::Strands::Task<void>
            {
                long total = 0;
                for (int i = 1; i <= rounds; ++i)
                {
                    requests.Put(i);
                    total += co_await replies.TakeAsync();
                }
                requests.Put(-1);
                sum = total;
            });
        ctx.AtEnd(
            [&ctx, &sum, rounds]
            { ctx.Check(sum == static_cast<long>(rounds) * (rounds + 1), "every reply arrived"); });
    }
}

// The guide's latch use: three workers prepare parts, three waiters read the total.
void PrepareAndTotal(Context& ctx)
{
    auto& prepared = ctx.Make<Guide::Latch>(3);
    auto& parts = ctx.Make<std::array<std::atomic<int>, 3>>();
    auto& seen = ctx.Make<std::atomic<int>>(0);
    for (int i = 0; i < 3; ++i)
    {
        auto prepare = [&prepared, &parts, i]
        {
            parts[static_cast<std::size_t>(i)].store(138 * (i + 1), std::memory_order_relaxed);
            prepared.CountDown();
        };
        ctx.Spawn("worker", prepare,
                  [prepare]() -> TC::Strands::Task<void>
                  {
                      prepare();
                      co_return;
                  });
    }
    for (int i = 0; i < 3; ++i)
    {
        auto total = [&parts]
        {
            int sum = 0;
            for (auto& part : parts)
                sum += part.load(std::memory_order_relaxed);
            return sum;
        };
        ctx.Spawn(
            "waiter",
            [&ctx, &prepared, &seen, total]
            {
                prepared.Wait();
                seen += ctx.Check(total() == 828, "a waiter saw every part") ? 1 : 0;
            },
            [&ctx, &prepared, &seen, total]() -> TC::Strands::Task<void>
            {
                co_await prepared;
                seen += ctx.Check(total() == 828, "a coroutine waiter saw every part") ? 1 : 0;
            });
    }
    ctx.AtEnd([&ctx, &seen] { ctx.Check(seen == 3, "all three waiters passed the latch"); });
}
} // namespace

TEST_CASE("The guide's Mailbox passes all 100 seeded deterministic runs")
{
    StressOptions options; // seeds 1..100, deterministic, every kind of waiter
    std::size_t perturbed = 0, tasks = 0, coroutines = 0;
    const auto summary =
        TC::Testing::Stress(options, [&](Context& ctx) { RequestReply<Guide::Mailbox>(ctx); });
    std::printf("guide Mailbox, deterministic: %s", summary.Describe().c_str());
    INFO(summary.Describe() << summary.firstFailure.Describe());
    REQUIRE(summary.runs == 100);
    REQUIRE(summary.passed == 100);
    // The runs did exercise the windows, from tasks and coroutines alike.
    for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u})
    {
        const auto result =
            TC::Testing::RunScenario(seed, [](Context& ctx) { RequestReply<Guide::Mailbox>(ctx); });
        REQUIRE(result.Passed());
        perturbed += result.perturbed;
        tasks += result.tasks;
        coroutines += result.coroutines;
    }
    REQUIRE(perturbed > 0);
    REQUIRE(tasks > 0);
    REQUIRE(coroutines > 0);
}

TEST_CASE("The guide's Latch passes all 100 seeded deterministic runs")
{
    StressOptions options;
    const auto summary = TC::Testing::Stress(options, PrepareAndTotal);
    std::printf("guide Latch, deterministic: %s", summary.Describe().c_str());
    INFO(summary.Describe() << summary.firstFailure.Describe());
    REQUIRE(summary.runs == 100);
    REQUIRE(summary.passed == 100);
}

TEST_CASE("A Mailbox without the re-check is caught in at least 99 of 100 seeded runs")
{
    StressOptions options;
    options.printFailures = false;
    const auto start = std::chrono::steady_clock::now();
    const auto summary =
        TC::Testing::Stress(options, [](Context& ctx) { RequestReply<Guide::BrokenMailbox>(ctx); });
    const auto elapsed = std::chrono::steady_clock::now() - start;
    std::printf("broken Mailbox, deterministic: %zu of %zu runs caught a lost wake-up in %.2f s\n",
                summary.lostWakeupRuns, summary.runs,
                std::chrono::duration<double>(elapsed).count());
    INFO(summary.Describe());
    REQUIRE(summary.runs == 100);
    REQUIRE(summary.lostWakeupRuns >= 99);
    REQUIRE(summary.failingSeeds.size() == summary.Failed());
    // The report names the primitive and the seed that replays it.
    const std::string report = summary.firstFailure.Describe();
    INFO(report);
    REQUIRE(report.find("lost wake-up") != std::string::npos);
    REQUIRE(report.find("Guide::BrokenMailbox") != std::string::npos);
    REQUIRE(report.find("replay: TC::Testing::RunScenario(" +
                        std::to_string(summary.failingSeeds[0])) != std::string::npos);
    REQUIRE(elapsed < 30s); // "within the default run time": the deterministic mode knows at once
}

TEST_CASE("A failing seed replays the same interleaving")
{
    StressOptions options;
    options.printFailures = false;
    options.runs = 10;
    const auto scenario = [](Context& ctx) { RequestReply<Guide::BrokenMailbox>(ctx); };
    const auto summary = TC::Testing::Stress(options, scenario);
    REQUIRE_FALSE(summary.failingSeeds.empty());
    const std::uint64_t seed = summary.failingSeeds.front();
    const auto first = TC::Testing::RunScenario(seed, scenario);
    const auto again = TC::Testing::RunScenario(seed, scenario);
    REQUIRE(first.lostWakeups > 0);
    REQUIRE(again.lostWakeups == first.lostWakeups);
    REQUIRE(again.racePoints == first.racePoints);
    REQUIRE(again.perturbed == first.perturbed);
    REQUIRE(again.finished == first.finished);
    REQUIRE(again.tasks == first.tasks);
}

TEST_CASE("A double resume is reported from a forked run")
{
    StressOptions options;
    options.isolation = TC::Testing::Isolation::Fork;
    options.runs = 10;
    options.printFailures = false;
    const auto summary = TC::Testing::Stress(options, [](Context& ctx)
                                             { RequestReply<Guide::DoubleResumingMailbox>(ctx); });
    INFO(summary.Describe() << summary.firstFailure.Describe());
    REQUIRE(summary.doubleResumeRuns >= 1);
    const std::string report = summary.firstFailure.Describe();
    REQUIRE(report.find("resumed twice") != std::string::npos);
    // A forked correct run still passes, and a forked lost wake-up is counted like one in-process.
    options.runs = 3;
    REQUIRE(TC::Testing::Stress(options, [](Context& ctx) { RequestReply<Guide::Mailbox>(ctx); })
                .Passed());
    const auto broken =
        TC::Testing::Stress(options, [](Context& ctx) { RequestReply<Guide::BrokenMailbox>(ctx); });
    REQUIRE(broken.lostWakeupRuns >= 2);
}

TEST_CASE("Stress mode: the guide's primitives pass from tasks, threads and coroutines")
{
    StressOptions options;
    options.mode = Mode::Stress;
    options.runs = Scaled(20);
    options.hangTimeout = TC::Duration(2s);
    const auto mailbox = TC::Testing::Stress(options, [](Context& ctx)
                                             { RequestReply<Guide::Mailbox>(ctx, 2, 50); });
    INFO(mailbox.Describe() << mailbox.firstFailure.Describe());
    REQUIRE(mailbox.Passed());
    const auto latch = TC::Testing::Stress(options, PrepareAndTotal);
    INFO(latch.Describe() << latch.firstFailure.Describe());
    REQUIRE(latch.Passed());
    // Every kind of waiter took part.
    std::size_t threads = 0, tasks = 0, coroutines = 0, racePoints = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed)
    {
        const auto result = TC::Testing::RunScenario(seed, PrepareAndTotal, options);
        REQUIRE(result.Passed());
        threads += result.threads;
        tasks += result.tasks;
        coroutines += result.coroutines;
    }
    REQUIRE(threads > 0);
    REQUIRE(tasks > 0);
    REQUIRE(coroutines > 0);
    // ... and the request/reply runs did reach the protocol's race points.
    const auto mailboxRun = TC::Testing::RunScenario(
        1, [](Context& ctx) { RequestReply<Guide::Mailbox>(ctx, 2, 50); }, options);
    REQUIRE(mailboxRun.Passed());
    racePoints += mailboxRun.racePoints;
    REQUIRE(racePoints > 0);
    REQUIRE(mailboxRun.perturbed > 0);
}

TEST_CASE("Stress mode catches the missing re-check too, with the waiter named")
{
    StressOptions options;
    options.mode = Mode::Stress;
    options.runs = 20;
    options.hangTimeout = TC::Duration(200ms);
    options.raceProbability = 0.8;
    options.waiterKinds = WaiterKinds::Task | WaiterKinds::Thread;
    options.printFailures = false;
    std::size_t caught = 0;
    TC::Testing::Result failure;
    for (std::uint64_t seed = 1; seed <= 20 && caught == 0; ++seed)
    {
        const auto result = TC::Testing::RunScenario(
            seed, [](Context& ctx) { RequestReply<Guide::BrokenMailbox>(ctx, 1, 200); }, options);
        if (result.lostWakeups > 0)
        {
            ++caught;
            failure = result;
        }
    }
    REQUIRE(caught == 1);
    INFO(failure.Describe());
    REQUIRE(failure.Describe().find("waits on Guide::BrokenMailbox") != std::string::npos);
}

TEST_CASE("Failed checks and escaping exceptions fail a run and say why")
{
    const auto result = TC::Testing::RunScenario(
        7,
        [](Context& ctx)
        {
            auto& box = ctx.Make<Guide::Mailbox>();
            ctx.Spawn("producer", [&box] { box.Put(5); });
            ctx.Spawn("consumer",
                      [&ctx, &box] { ctx.Check(box.Take() == 6, "the consumer took 6"); });
            ctx.Spawn("thrower", [] { throw std::runtime_error("boom"); });
        });
    INFO(result.Describe());
    REQUIRE_FALSE(result.Passed());
    REQUIRE(result.failedChecks == 2);
    REQUIRE(result.lostWakeups == 0);
    REQUIRE(result.finished == 3);
    const std::string text = result.Describe();
    REQUIRE(text.find("check failed: the consumer took 6") != std::string::npos);
    REQUIRE(text.find("participant 'thrower' threw: boom") != std::string::npos);
}

TEST_CASE("Seeds decide the interleaving: different seeds explore different orders")
{
    auto order = [](std::uint64_t seed)
    {
        std::string trace;
        auto result = TC::Testing::RunScenario(seed,
                                               [&trace](Context& ctx)
                                               {
                                                   auto& box = ctx.Make<Guide::Mailbox>();
                                                   for (char name : std::string("abcd"))
                                                       ctx.Spawn(std::string(1, name),
                                                                 [&trace, &box, name]
                                                                 {
                                                                     trace += name;
                                                                     TC::YieldTask();
                                                                     trace += name;
                                                                     box.Put(1);
                                                                 });
                                               });
        REQUIRE(result.Passed());
        return trace;
    };
    const std::string first = order(11);
    REQUIRE(order(11) == first);
    bool differs = false;
    for (std::uint64_t seed = 12; seed < 20 && !differs; ++seed)
        differs = order(seed) != first;
    REQUIRE(differs);
}

// MarkedMailbox: the guide's Mailbox with its two inner windows marked for the kit.
void Guide::MarkedMailbox::Put(int value) noexcept
{
    value_.store(value, std::memory_order_seq_cst);
    TC::Testing::RaceWindow(); // between the state change and the waiter exchange
    if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
        TC::ResumeTask(waiter);
}

void Guide::MarkedMailbox::OnSuspended(TC::SuspendedTask task) noexcept
{
    waiter_.store(task, std::memory_order_seq_cst);
    TC::Testing::RaceWindow(); // between publishing the waiter and re-checking
    if (value_.load(std::memory_order_seq_cst) != 0)
        if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
}

TEST_CASE("RaceWindow perturbs a primitive's own windows in both modes")
{
    StressOptions options;
    options.runs = 30;
    auto deterministic =
        TC::Testing::Stress(options, [](Context& ctx) { RequestReply<Guide::MarkedMailbox>(ctx); });
    INFO(deterministic.Describe());
    REQUIRE(deterministic.Passed());
    options.mode = Mode::Stress;
    options.runs = Scaled(5);
    auto stress =
        TC::Testing::Stress(options, [](Context& ctx) { RequestReply<Guide::MarkedMailbox>(ctx); });
    INFO(stress.Describe());
    REQUIRE(stress.Passed());
    // Outside a run it does nothing.
    TC::Testing::RaceWindow();
    // Only one run at a time.
    bool refused = false;
    TC::Testing::RunScenario(1,
                             [&refused](Context& ctx)
                             {
                                 ctx.Spawn("nested",
                                           [&refused]
                                           {
                                               try
                                               {
                                                   (void)TC::Testing::RunScenario(2,
                                                                                  [](Context&) {});
                                               }
                                               catch (const std::logic_error&)
                                               {
                                                   refused = true;
                                               }
                                           });
                             });
    REQUIRE(refused);
}
