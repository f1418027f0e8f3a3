// Scheduler::StartBulk: `count` tasks started in one step, task i calling body(i) on its own copy
// of the body, each a task as Start makes it (join and detach, names, hooks, DumpTasks), from a
// task, a converted thread or the host; all or nothing when a copy of the body throws; in index
// order on a scheduler with one worker or none; refused once the scheduler stops.

#include "DeathTest.h"
#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/Diagnostics.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Scaled;

namespace
{
#if defined(__SANITIZE_THREAD__)
constexpr double kBuildFactor = 0.1; // each task's first switch makes a ThreadSanitizer fiber: slow
#else
constexpr double kBuildFactor = 1;
#endif

// A batch of about `count` tasks, fewer where tasks are slow (ThreadSanitizer).
std::size_t Tasks(std::size_t count)
{
    return static_cast<std::size_t>(static_cast<double>(count) * kBuildFactor);
}

// One flag per index: every index runs exactly once.
struct IndexRecord
{
    explicit IndexRecord(std::size_t count) : ran(count) {}
    std::vector<std::atomic<int>> ran;
    bool EachOnce() const
    {
        for (const auto& flag : ran)
            if (flag.load() != 1)
                return false;
        return true;
    }
};

void JoinAll(std::vector<JoinHandle>& handles)
{
    for (JoinHandle& handle : handles)
        handle.Join();
}

// A body whose copies throw from the `failAt`-th copy on (counting every copy made).
struct ThrowingCopy
{
    std::shared_ptr<std::atomic<int>> copies;
    std::shared_ptr<std::atomic<int>> ran;
    int failAt;
    ThrowingCopy(std::shared_ptr<std::atomic<int>> c, std::shared_ptr<std::atomic<int>> r, int f)
        : copies(std::move(c)), ran(std::move(r)), failAt(f)
    {
    }
    ThrowingCopy(const ThrowingCopy& other) : copies(other.copies), ran(other.ran), failAt(other.failAt)
    {
        if (copies->fetch_add(1) + 1 >= failAt)
            throw std::runtime_error("copy refused");
    }
    void operator()(std::size_t) const { ran->fetch_add(1); }
};
} // namespace

TEST_CASE("StartBulk from a plain thread onto two workers runs each index once; Join joins each")
{
    Scheduler scheduler(2u);
    IndexRecord record(Tasks(2000));
    std::vector<JoinHandle> handles = scheduler.StartBulk(
        Tasks(2000), [&record](std::size_t i) { record.ran[i].fetch_add(1); });
    REQUIRE(handles.size() == Tasks(2000));
    for (const JoinHandle& handle : handles)
        REQUIRE(handle.Joinable());
    JoinAll(handles); // a converted-thread wait
    REQUIRE(record.EachOnce());
    REQUIRE(scheduler.LiveTasks() == 0);
}

TEST_CASE("StartBulk from a task: its tasks run beside it and it joins them")
{
    Scheduler scheduler(2u);
    IndexRecord record(Tasks(1000));
    JoinHandle parent = scheduler.Start(
        [&]
        {
            auto handles = Scheduler::Current()->StartBulk(
                Tasks(1000), [&record](std::size_t i) { record.ran[i].fetch_add(1); });
            JoinAll(handles);
        });
    parent.Join();
    REQUIRE(record.EachOnce());
}

TEST_CASE("StartBulk from the host of a scheduler without workers runs in index order when pumped")
{
    Scheduler scheduler(0u);
    scheduler.RunUntilIdle(); // the host thread pumps it: later starts go to its own queue
    std::vector<std::size_t> order;
    auto handles = scheduler.StartBulk(100, [&order](std::size_t i) { order.push_back(i); });
    REQUIRE(order.empty()); // never inline
    const PumpResult pumped = scheduler.RunUntilIdle();
    REQUIRE(pumped.ran == 100);
    REQUIRE(order.size() == 100);
    for (std::size_t i = 0; i < order.size(); ++i)
        REQUIRE(order[i] == i);
    JoinAll(handles);
}

TEST_CASE("StartBulk on one worker starts in index order, after the thread's earlier Start")
{
    Scheduler scheduler(1u);
    std::vector<int> order; // one worker: no two tasks run at once
    for (std::size_t round = 0; round < Tasks(50); ++round)
    {
        order.clear();
        JoinHandle first = scheduler.Start([&order] { order.push_back(-1); });
        auto handles = scheduler.StartBulk(
            64, [&order](std::size_t i) { order.push_back(static_cast<int>(i)); });
        first.Join();
        JoinAll(handles);
        REQUIRE(order.size() == 65);
        REQUIRE(order[0] == -1);
        for (std::size_t i = 1; i < order.size(); ++i)
            REQUIRE(order[i] == static_cast<int>(i) - 1);
    }
}

TEST_CASE("StartBulk onto a host-pumped scheduler from another thread runs when the host pumps")
{
    Scheduler scheduler(0u);
    scheduler.RunUntilIdle();
    IndexRecord record(300);
    std::vector<JoinHandle> handles;
    std::thread other([&] { handles = scheduler.StartBulk(300, [&record](std::size_t i) { record.ran[i]++; }); });
    other.join();
    scheduler.RunUntilIdle();
    REQUIRE(record.EachOnce());
    JoinAll(handles);
}

TEST_CASE("StartBulk's tasks carry the name, priority and hooks a Start gives, and DumpTasks lists them")
{
    std::atomic<int> enters{0};
    std::atomic<int> leaves{0};
    std::atomic<int> misnamed{0};
    SchedulerOptions options;
    options.hooks.taskEnter = [&](TaskHandle, const char* name)
    {
        ++enters;
        if (std::string(name) != "bulk-job")
            ++misnamed;
    };
    options.hooks.taskLeave = [&](TaskHandle, const char*) { ++leaves; };
    Scheduler scheduler(options);
    scheduler.RunUntilIdle();
    TaskOptions taskOptions;
    taskOptions.name = "bulk-job";
    taskOptions.priority = Priority::High;
    std::vector<int> order;
    auto normal = scheduler.Start([&order] { order.push_back(-1); });
    auto handles = scheduler.StartBulk(
        3, [&order](std::size_t i) { order.push_back(static_cast<int>(i)); }, taskOptions);
    std::ostringstream dump;
    DumpTasks(dump);
    std::size_t listed = 0;
    for (std::size_t at = dump.str().find("bulk-job"); at != std::string::npos;
         at = dump.str().find("bulk-job", at + 1))
        ++listed;
    INFO(dump.str());
    REQUIRE(listed == 3);
    scheduler.RunUntilIdle();
    REQUIRE(order == std::vector<int>{0, 1, 2, -1}); // High before the Normal started earlier
    normal.Join();
    JoinAll(handles);
    REQUIRE(enters.load() == 4);
    REQUIRE(leaves.load() == 4);
    REQUIRE(misnamed.load() == 1); // the unnamed Start's "task"
}

TEST_CASE("StartBulk: a task that throws rethrows from its own Join only")
{
    Scheduler scheduler(2u);
    auto handles = scheduler.StartBulk(10, [](std::size_t i)
                                       {
                                           if (i == 7)
                                               throw std::runtime_error("job 7 failed");
                                       });
    for (std::size_t i = 0; i < handles.size(); ++i)
    {
        if (i == 7)
            REQUIRE_THROWS_WITH(handles[i].Join(), "job 7 failed");
        else
            REQUIRE_NOTHROW(handles[i].Join());
    }
}

TEST_CASE("StartBulk is all or nothing: a copy of the body that throws starts no task")
{
    Scheduler scheduler(2u);
    auto copies = std::make_shared<std::atomic<int>>(0);
    auto ran = std::make_shared<std::atomic<int>>(0);
    const int count = static_cast<int>(Tasks(1000));
    const ThrowingCopy body(copies, ran, count / 2);
    REQUIRE_THROWS_WITH(scheduler.StartBulk(count, body), "copy refused");
    REQUIRE_THROWS_WITH(scheduler.StartBulkDetached(count, body), "copy refused");
    REQUIRE(scheduler.LiveTasks() == 0);
    REQUIRE(ran->load() == 0);
    REQUIRE(copies.use_count() == 2); // every copy made was destroyed
    // The scheduler goes on starting: the blocks went back.
    copies->store(-1'000'000);
    auto handles = scheduler.StartBulk(count, body);
    JoinAll(handles);
    REQUIRE(ran->load() == count);
}

TEST_CASE("StartBulkDetached: the tasks run unobserved; the handles' absence is the only difference")
{
    Scheduler scheduler(2u);
    IndexRecord record(Tasks(2000));
    std::atomic<int> left{static_cast<int>(Tasks(2000))};
    TestSupport::Gate gate;
    scheduler.StartBulkDetached(Tasks(2000),
                                [&](std::size_t i)
                                {
                                    record.ran[i].fetch_add(1);
                                    if (left.fetch_sub(1) == 1)
                                        while (gate.OpenAll() == 0)
                                            std::this_thread::yield();
                                });
    SuspendTask(&gate); // the plain thread waits, converted, until the last task opens the gate
    REQUIRE(record.EachOnce());
    while (scheduler.LiveTasks() != 0)
        std::this_thread::yield();
}

TEST_CASE("StartBulkDetached: a task that throws ends the process naming it")
{
    const auto result = TestSupport::RunInChild(
        []
        {
            Scheduler scheduler(1u);
            TaskOptions options;
            options.name = "bulk-thrower";
            scheduler.StartBulkDetached(
                4, [](std::size_t i) { if (i == 2) throw std::runtime_error("bulk failure"); }, options);
            std::this_thread::sleep_for(std::chrono::seconds(10));
        });
    INFO(result.stderrText);
    REQUIRE(result.aborted);
    REQUIRE(result.stderrText.find("detached task 'bulk-thrower' ended with an exception: bulk failure") !=
            std::string::npos);
}

TEST_CASE("StartBulk of zero tasks starts nothing; after Stop it is refused naming the call")
{
    Scheduler scheduler(2u);
    REQUIRE(scheduler.StartBulk(0, [](std::size_t) {}).empty());
    scheduler.Stop();
    REQUIRE_THROWS_WITH(scheduler.StartBulk(3, [](std::size_t) {}),
                        Catch::Contains("StartBulk refused: the scheduler is stopping or stopped"));
    REQUIRE_THROWS_AS(scheduler.StartBulkDetached(3, [](std::size_t) {}), std::logic_error);
}

TEST_CASE("StartBulk stress: batches from the plain thread and from tasks, every index once")
{
    const long total = static_cast<long>(static_cast<double>(Scaled(1'000'000)) * kBuildFactor);
    constexpr std::size_t kBatch = 2000;
    const long rounds = std::max(1L, total / static_cast<long>(2 * kBatch));
    Scheduler scheduler(2u);
    std::atomic<long> sum{0};
    std::atomic<long> count{0};
    for (long round = 0; round < rounds; ++round)
    {
        // Half from the plain thread, half from a task that starts and joins its own batch.
        auto outer = scheduler.StartBulk(kBatch, [&](std::size_t i)
                                         {
                                             sum.fetch_add(static_cast<long>(i));
                                             count.fetch_add(1);
                                         });
        JoinHandle inner = scheduler.Start(
            [&]
            {
                auto handles = Scheduler::Current()->StartBulk(kBatch, [&](std::size_t i)
                                                               {
                                                                   sum.fetch_add(static_cast<long>(i));
                                                                   count.fetch_add(1);
                                                               });
                JoinAll(handles);
            });
        JoinAll(outer);
        inner.Join();
    }
    const long perBatch = static_cast<long>(kBatch * (kBatch - 1) / 2);
    REQUIRE(count.load() == rounds * 2 * static_cast<long>(kBatch));
    REQUIRE(sum.load() == rounds * 2 * perBatch);
    REQUIRE(scheduler.LiveTasks() == 0);
}
