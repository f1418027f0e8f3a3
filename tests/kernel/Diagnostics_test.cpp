// Diagnostics: race-point hooks, the registry of suspended waiters, hang reports and seeded
// (replayable) pumping. Linked against the checked kernel.

#include "DeathTest.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <poll.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace TC;
using namespace std::chrono_literals;
using TestSupport::Mailbox;

namespace
{
std::atomic<int> beforeCount{0};
std::atomic<int> afterCount{0};
std::atomic<int> resumeCount{0};

void CountingHook(RacePoint point, SuspendedTask) noexcept
{
    switch (point)
    {
    case RacePoint::BeforeOnSuspended:
        ++beforeCount;
        break;
    case RacePoint::AfterOnSuspended:
        ++afterCount;
        break;
    case RacePoint::BeforeResume:
        ++resumeCount;
        break;
    }
}

std::vector<int> RunShuffled(std::uint64_t seed)
{
    SchedulerOptions options;
    options.shuffleSeed = seed;
    Scheduler host(options);
    std::vector<int> order;
    std::vector<JoinHandle> tasks;
    for (int i = 0; i < 16; ++i)
        tasks.push_back(host.Start([&order, i] { order.push_back(i); }));
    host.RunUntilIdle();
    for (auto& task : tasks)
        task.Join();
    return order;
}
} // namespace

TEST_CASE("The race-point hook sees every suspension and resume")
{
    SetRacePointHook(&CountingHook);
    Mailbox requests, replies;
    Scheduler scheduler(1);
    auto server = scheduler.Start([&] {
        for (int r; (r = requests.Take()) > 0;)
            replies.Put(r);
    });
    for (int i = 1; i <= 100; ++i)
    {
        requests.Put(i);
        REQUIRE(replies.Take() == i);
    }
    requests.Put(-1);
    server.Join();
    SetRacePointHook(nullptr);
    REQUIRE(beforeCount == afterCount);
    REQUIRE(beforeCount >= 100);
    REQUIRE(resumeCount >= 100);
}

TEST_CASE("The registry lists who waits on what, and forgets a waiter once resumed")
{
    Mailbox box;
    Scheduler scheduler(1);
    auto task = scheduler.Start([&] { (void)box.Take(); }, {.name = "reader"});
    std::vector<SuspendedWaiterInfo> waiters;
    const auto giveUp = std::chrono::steady_clock::now() + 60s; // a worker slow to start (TSan)
    while (waiters.empty() && std::chrono::steady_clock::now() < giveUp)
    {
        std::this_thread::sleep_for(1ms);
        waiters = SnapshotSuspendedWaiters();
    }
    REQUIRE(waiters.size() == 1);
    REQUIRE(waiters[0].waiter == "task 'reader'");
    REQUIRE(waiters[0].waitsOn == "TestSupport::Mailbox");
    box.Put(1);
    task.Join();
    REQUIRE(SnapshotSuspendedWaiters().empty());
}

TEST_CASE("A hang report names the stuck waiter, what it waits on and for how long")
{
    auto result = TestSupport::RunInChild(
        []
        {
            // The report goes through a pipe this child reads until a waiter's line is complete,
            // then passes on: a fixed sleep for it was too short for a child descheduled under
            // TSan.
            int report[2];
            if (pipe(report) != 0)
                _exit(2);
            const int parentStderr = dup(STDERR_FILENO);
            dup2(report[1], STDERR_FILENO);
            close(report[1]);
            REQUIRE(EnableHangReports(50ms));
            Mailbox never;
            Scheduler scheduler(1);
            auto task = scheduler.Start([&] { (void)never.Take(); }, {.name = "stuck"});
            std::string seen;
            auto lineComplete = [&]
            {
                const std::size_t at = seen.find(" waits on ");
                return at != std::string::npos && seen.find('\n', at) != std::string::npos;
            };
            const auto giveUp = std::chrono::steady_clock::now() + 60s; // no report: the test fails
            while (!lineComplete() && std::chrono::steady_clock::now() < giveUp)
            {
                pollfd readable{report[0], POLLIN, 0};
                char buffer[512];
                ssize_t n = 0;
                if (poll(&readable, 1, 100) > 0 && (n = read(report[0], buffer, sizeof buffer)) > 0)
                    seen.append(buffer, static_cast<std::size_t>(n));
            }
            if (write(parentStderr, seen.data(), seen.size()) < 0)
                _exit(2);
            _exit(0);
        });
    INFO(result.stderrText);
    REQUIRE(result.exitCode == 0);
    REQUIRE(result.stderrText.find("TC hang report") != std::string::npos);
    REQUIRE(result.stderrText.find("task 'stuck' waits on TestSupport::Mailbox") !=
            std::string::npos);
}

TEST_CASE("A seeded host scheduler replays the same interleaving for the same seed")
{
    const auto first = RunShuffled(12345);
    REQUIRE(first.size() == 16);
    REQUIRE(RunShuffled(12345) == first);
    bool someDiffer = false;
    for (std::uint64_t seed = 1; seed <= 8 && !someDiffer; ++seed)
        someDiffer = RunShuffled(seed) != first;
    REQUIRE(someDiffer);
    std::vector<int> fifo(16);
    for (int i = 0; i < 16; ++i)
        fifo[i] = i;
    REQUIRE(RunShuffled(0) == fifo);
}
