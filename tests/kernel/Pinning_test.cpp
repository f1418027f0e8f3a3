// TaskOptions::worker: a pinned task starts and resumes only on its worker, across yields, joins
// resumed from other workers and the main thread, and bulk starts; an index past the last
// worker throws std::out_of_range; a pinned task cannot move to another scheduler.

#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Gate;
using TestSupport::Scaled;

namespace
{
// A scheduler with `count` workers that knows each worker's thread.
struct Workers
{
    explicit Workers(unsigned count) : threads(count), scheduler(Options(count)) {}
    SchedulerOptions Options(unsigned count)
    {
        SchedulerOptions options;
        options.workerCount = count;
        options.name = "pinned";
        options.hooks.threadStart = [this](unsigned index) { threads[index] = std::this_thread::get_id(); };
        return options;
    }
    // Written by each worker before it runs anything, read there (or after a join).
    std::vector<std::thread::id> threads;
    Scheduler scheduler;
};
} // namespace

TEST_CASE("A pinned task starts and resumes only on its worker, through yields and joins")
{
    Workers workers(2);
    const long rounds = Scaled(2000);
    std::atomic<long> elsewhere{0};
    std::atomic<long> resumes{0};
    std::vector<JoinHandle> tasks;
    for (unsigned pin : {0u, 1u, 0u, 1u})
        tasks.push_back(workers.scheduler.Start(
            [&, pin] {
                auto check = [&] {
                    if (std::this_thread::get_id() != workers.threads[pin])
                        ++elsewhere;
                    ++resumes;
                };
                check();
                for (long i = 0; i < rounds; ++i)
                {
                    YieldTask();
                    check();
                    // Resumed by a child that may end on the other worker, or is pinned there.
                    TaskOptions child;
                    if (i % 2)
                        child.worker = 1 - pin;
                    workers.scheduler.Start([] { YieldTask(); }, child).Join();
                    check();
                }
            },
            {.name = "pinned", .worker = pin}));
    for (JoinHandle& task : tasks)
        task.Join();
    CHECK(elsewhere.load() == 0);
    CHECK(resumes.load() == 4 * (1 + 2 * rounds));
}

TEST_CASE("A pinned task resumed from the main thread goes back to its worker")
{
    Workers workers(2);
    Gate gate;
    std::atomic<int> elsewhere{0};
    constexpr int kWaits = 50;
    std::vector<JoinHandle> tasks;
    for (unsigned pin : {1u, 0u})
        tasks.push_back(workers.scheduler.Start(
            [&, pin] {
                for (int i = 0; i < kWaits; ++i)
                {
                    SuspendTask(&gate);
                    if (std::this_thread::get_id() != workers.threads[pin])
                        ++elsewhere;
                }
            },
            {.worker = pin}));
    for (int opened = 0; opened < 2 * kWaits;)
        opened += gate.OpenAll();
    for (JoinHandle& task : tasks)
        task.Join();
    CHECK(elsewhere.load() == 0);
}

TEST_CASE("A pinned bulk start runs every task on that worker, from outside and from a worker")
{
    Workers workers(2);
    std::atomic<int> elsewhere{0};
    std::atomic<int> ran{0};
    auto body = [&](std::size_t) {
        if (std::this_thread::get_id() != workers.threads[1])
            ++elsewhere;
        ++ran;
    };
    auto outside = workers.scheduler.StartBulk(100, body, {.worker = 1});
    JoinHandle inside = workers.scheduler.Start(
        [&] {
            for (JoinHandle& task : workers.scheduler.StartBulk(100, body, {.worker = 1}))
                task.Join();
        },
        {.worker = 1});
    for (JoinHandle& task : outside)
        task.Join();
    inside.Join();
    CHECK(ran.load() == 200);
    CHECK(elsewhere.load() == 0);
}

TEST_CASE("A worker index past the last worker throws std::out_of_range, starting nothing")
{
    Workers workers(2);
    CHECK_THROWS_AS(workers.scheduler.Start([] {}, {.worker = 2}), std::out_of_range);
    CHECK_THROWS_WITH(workers.scheduler.Start([] {}, {.worker = 7}),
                      "TC::Scheduler::Start: TaskOptions::worker 7 is out of range: 'pinned' has 2 "
                      "worker(s)");
    CHECK_THROWS_AS(workers.scheduler.StartBulkDetached(3, [](std::size_t) {}, {.worker = 2}),
                    std::out_of_range);
    CHECK(workers.scheduler.LiveTasks() == 0);

    // Workerless: the host is index 0, and runs the task as any other.
    Scheduler host;
    CHECK_THROWS_WITH(host.Start([] {}, {.worker = 1}), Catch::Contains("host (index 0)"));
    bool ran = false;
    JoinHandle task = host.Start([&] { ran = true; }, {.worker = 0});
    host.RunUntilIdle();
    task.Join();
    CHECK(ran);
}

TEST_CASE("A pinned task cannot move to another scheduler")
{
    Workers workers(1);
    Scheduler other(1);
    bool refused = false;
    workers.scheduler
        .Start(
            [&] {
                try
                {
                    MoveCurrentTaskTo(other);
                }
                catch (const std::logic_error&)
                {
                    refused = Scheduler::Current() == &workers.scheduler;
                }
            },
            {.worker = 0})
        .Join();
    CHECK(refused);
}
