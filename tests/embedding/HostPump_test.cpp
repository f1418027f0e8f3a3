// The host-pumped scheduler as a game loop uses it: RunFor keeps its budget to within one task,
// RunPending and RunFor report what is left, priorities let the host run only this frame's work,
// WaitForWork sleeps until a submit, submission never runs work inline, tasks and coroutines move
// to the host and back, and long tasks poll the shutdown request.

#include "EmbeddingTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using TC::Priority;
using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::Promise;
using TC::Testing::Detached;
using TC::Testing::NowNs;

TEST_CASE("RunFor never overruns its budget by more than one task", "[host][budget]")
{
    constexpr auto kTask = 5ms;
    constexpr auto kBudget = 17ms;
    // Only for the turn's total, which no bound can tie to the pump itself: a preemption after
    // the pump's last clock read (TSan, a loaded machine) lengthens it by any amount.
    constexpr std::int64_t kSchedulingSlackNs = 1'000'000'000;
    constexpr int kTasks = 13;
    TC::Scheduler host;
    host.RunPending();
    std::vector<std::int64_t> starts, ends;
    for (int i = 0; i < kTasks; ++i)
        host.Start(
                [&]
                {
                    starts.push_back(NowNs());
                    std::this_thread::sleep_for(kTask);
                    ends.push_back(NowNs());
                })
            .Detach();

    const std::int64_t budgetNs = std::chrono::nanoseconds(kBudget).count();
    int turns = 0;
    while (host.LiveTasks() > 0)
    {
        ++turns;
        const std::size_t before = starts.size();
        const std::int64_t t0 = NowNs();
        const TC::PumpResult result = host.RunFor(kBudget);
        const std::int64_t t1 = NowNs();
        const std::size_t ran = starts.size() - before;
        CHECK(result.ran == ran);
        REQUIRE(ran >= 1); // and starts[before] below exists
        // Each task sleeps at least kTask, so at most ceil(budget / task) start in time.
        CHECK(ran <= 4);
        // The pump's deadline is its start plus the budget, and it started before its first
        // task did; it starts another only if its clock, read after the previous task ended, is
        // still short of the deadline. So only the first task may start after the deadline,
        // whatever preemptions delay the tasks' own clock reads.
        const std::int64_t latestDeadline = starts[before] + budgetNs;
        for (std::size_t k = before + 1; k < starts.size(); ++k)
            CHECK(ends[k - 1] < latestDeadline);
        // The turn ends at most one task after the deadline.
        std::int64_t longest = 0;
        for (std::size_t k = before; k < ends.size(); ++k)
            longest = std::max(longest, ends[k] - starts[k]);
        CHECK(t1 - t0 <= budgetNs + longest + kSchedulingSlackNs);
        CHECK(result.pending == static_cast<std::size_t>(kTasks) - starts.size());
        // A turn whose last task ended past the deadline reports no budget left.
        if (ends.back() >= latestDeadline)
            CHECK(result.left == TC::Duration::Zero());
    }
    CHECK(starts.size() == static_cast<std::size_t>(kTasks));
    CHECK(turns >= 4);
}

TEST_CASE("RunFor with nothing queued returns at once with the budget left", "[host][budget]")
{
    TC::Scheduler host;
    const TC::PumpResult result = host.RunFor(10ms);
    CHECK(result.ran == 0);
    CHECK(result.pending == 0);
    CHECK(result.left > TC::Duration(5ms));
    CHECK(result.left <= TC::Duration(10ms));
}

TEST_CASE("RunPending runs what was queued, at most maxTasks, and reports the rest", "[host]")
{
    TC::Scheduler host;
    host.RunPending();
    int ran = 0;
    for (int i = 0; i < 10; ++i)
        host.Start([&ran] { ++ran; }).Detach();
    TC::PumpResult result = host.RunPending(3);
    CHECK(result.ran == 3);
    CHECK(result.pending == 7);
    CHECK(ran == 3);

    // Work queued by the work it runs waits for the next call.
    bool child = false;
    host.Start([&] { host.Start([&child] { child = true; }).Detach(); }).Detach();
    result = host.RunPending();
    CHECK(result.ran == 8);
    CHECK(result.pending == 1);
    CHECK_FALSE(child);
    result = host.RunUntilIdle();
    CHECK(result.ran == 1);
    CHECK(result.pending == 0);
    CHECK(child);
}

TEST_CASE("priorities: the host can run only the high one", "[host][priority]")
{
    TC::Scheduler host;
    host.RunPending();
    std::string order;
    for (int i = 0; i < 4; ++i)
    {
        host.Start([&order] { order += 'N'; }, {.name = "background", .priority = Priority::Normal})
            .Detach();
        host.Start([&order] { order += 'H'; }, {.name = "frame", .priority = Priority::High})
            .Detach();
    }
    TC::PumpResult result = host.RunPending(SIZE_MAX, Priority::High);
    CHECK(result.ran == 4);
    CHECK(result.pending == 0); // counted up to the priority asked for
    CHECK(order == "HHHH");
    CHECK(host.RunFor(5ms, Priority::High).ran == 0);
    CHECK(host.RunUntilIdle(Priority::High).ran == 0);
    CHECK(order == "HHHH");

    // Both queued: high first.
    host.Start([&order] { order += 'h'; }, {.priority = Priority::High}).Detach();
    result = host.RunPending();
    CHECK(result.ran == 5);
    CHECK(order == "HHHHhNNNN");

    // Coroutine resumptions carry a priority too.
    order.clear();
    [](TC::Scheduler& h, std::string& out) -> Detached
    {
        co_await h.Schedule(Priority::Normal);
        out += 'n';
    }(host, order);
    [](TC::Scheduler& h, std::string& out) -> Detached
    {
        co_await h.Schedule(Priority::High);
        out += 'h';
    }(host, order);
    CHECK(host.RunPending(SIZE_MAX, Priority::High).ran == 1);
    CHECK(order == "h");
    host.RunUntilIdle();
    CHECK(order == "hn");
}

TEST_CASE("a High task that waits comes back at High", "[host][priority]")
{
    TC::Scheduler host;
    TC::Scheduler workers(1);
    host.RunPending();
    auto [future, promise] = MakeFuture<int>();
    int got = 0;
    host.Start([&got, f = std::move(future)]() mutable { got = f.Wait(); },
               {.priority = Priority::High})
        .Detach();
    CHECK(host.RunPending(SIZE_MAX, Priority::High).ran == 1); // runs until it suspends
    workers.Start([p = std::move(promise)]() mutable { p.SetValue(3); }).Join();
    host.RunPending(SIZE_MAX, Priority::High);
    CHECK(got == 3);
}

TEST_CASE("WaitForWork wakes on a submit from another thread and times out otherwise",
          "[host][wait]")
{
    TC::Scheduler host;
    host.RunPending();

    auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(host.WaitForWork(20ms));
    CHECK(std::chrono::steady_clock::now() - start >= 19ms);

    bool ran = false;
    std::thread submitter(
        [&]
        {
            std::this_thread::sleep_for(20ms);
            host.Start([&ran] { ran = true; }).Detach();
        });
    start = std::chrono::steady_clock::now();
    CHECK(host.WaitForWork(10s));
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    submitter.join();
    CHECK_FALSE(ran); // WaitForWork only waits; the host decides when to run
    CHECK(host.RunUntilIdle().ran == 1);
    CHECK(ran);

    // A coroutine resumption submitted from another thread wakes it as well.
    bool resumed = false;
    std::coroutine_handle<> handle;
    struct Capture
    {
        std::coroutine_handle<>& out;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { out = h; }
        void await_resume() const noexcept {}
    };
    [](std::coroutine_handle<>& out, bool& flag) -> Detached
    {
        co_await Capture{out};
        flag = true;
    }(handle, resumed);
    std::thread resumer(
        [&]
        {
            std::this_thread::sleep_for(10ms);
            host.Submit(handle);
        });
    CHECK(host.WaitForWork(10s));
    resumer.join();
    CHECK_FALSE(resumed);
    host.RunUntilIdle();
    CHECK(resumed);

    // Already queued: returns true at once.
    host.Start([] {}).Detach();
    start = std::chrono::steady_clock::now();
    CHECK(host.WaitForWork(10s));
    CHECK(std::chrono::steady_clock::now() - start < 1s);
    host.RunUntilIdle();
}

TEST_CASE("submission never runs work inline", "[host][submit]")
{
    TC::Scheduler host;
    TC::Scheduler workers(2);
    const auto hostId = TC::Testing::ThisThreadId();

    bool ran = false;
    host.Start([&ran] { ran = true; }).Detach();
    CHECK_FALSE(ran);

    bool child = false;
    bool childRanInline = true;
    host.Start(
            [&]
            {
                host.Start([&child] { child = true; }).Detach();
                childRanInline = child;
            })
        .Detach();
    bool resumed = false;
    [](TC::Scheduler& h, bool& flag) -> Detached
    {
        co_await h.Schedule();
        flag = true;
    }(host, resumed);
    CHECK_FALSE(resumed);

    std::atomic<bool> workerOnHost{true};
    auto onWorkers = workers.Start([&] { workerOnHost = TC::Testing::ThisThreadId() == hostId; });
    onWorkers.Join();
    CHECK_FALSE(workerOnHost);

    host.RunUntilIdle();
    CHECK(ran);
    CHECK_FALSE(childRanInline);
    CHECK(child);
    CHECK(resumed);
}

TEST_CASE("MoveCurrentTaskTo: run the rest on the host, then back on the workers", "[host][move]")
{
    TC::Scheduler host;
    TC::Scheduler workers(2);
    host.RunPending();
    const auto hostId = TC::Testing::ThisThreadId();

    struct Seen
    {
        bool startedOnWorker = false;
        bool onHost = false;
        bool hostCountsIt = false;
        bool waitedOnHost = false;
        bool backOnWorker = false;
    } seen;
    auto [future, promise] = MakeFuture<int>();
    auto task = workers.Start(
        [&, f = std::move(future)]() mutable
        {
            seen.startedOnWorker =
                TC::Testing::ThisThreadId() != hostId && TC::Scheduler::Current() == &workers;
            TC::MoveCurrentTaskTo(host, Priority::High);
            seen.onHost =
                TC::Testing::ThisThreadId() == hostId && TC::Scheduler::Current() == &host;
            seen.hostCountsIt = host.LiveTasks() == 1;
            seen.waitedOnHost = f.Wait() == 9 && TC::Testing::ThisThreadId() == hostId;
            TC::MoveCurrentTaskTo(workers);
            seen.backOnWorker =
                TC::Testing::ThisThreadId() != hostId && TC::Scheduler::Current() == &workers;
        });
    std::thread resolver(
        [p = std::move(promise)]() mutable
        {
            std::this_thread::sleep_for(5ms);
            p.SetValue(9);
        });
    task.Join(); // the host thread's wait pumps the host, which runs the moved task
    resolver.join();
    CHECK(seen.startedOnWorker);
    CHECK(seen.onHost);
    CHECK(seen.hostCountsIt);
    CHECK(seen.waitedOnHost);
    CHECK(seen.backOnWorker);
    CHECK(host.LiveTasks() == 0);
}

TEST_CASE("a coroutine moves to the host and back with Schedule", "[host][move]")
{
    TC::Scheduler host;
    TC::Scheduler workers(2);
    host.RunPending();
    const auto hostId = TC::Testing::ThisThreadId();
    auto [done, promise] = MakeFuture<std::string>();
    [](TC::Scheduler& h, TC::Scheduler& w, std::thread::id hid,
       Promise<std::string> out) -> Detached
    {
        std::string trail;
        co_await w.Schedule();
        trail += TC::Testing::ThisThreadId() != hid ? "worker " : "? ";
        co_await h.Schedule(Priority::High);
        trail += TC::Testing::ThisThreadId() == hid ? "host " : "? ";
        co_await w.Schedule();
        trail += TC::Testing::ThisThreadId() != hid ? "worker" : "?";
        out.SetValue(trail);
    }(host, workers, hostId, std::move(promise));
    CHECK(done.Wait() == "worker host worker");
}

TEST_CASE("RequestShutdown is polled by long tasks", "[host][shutdown]")
{
    SECTION("on workers")
    {
        TC::Scheduler workers(2);
        std::atomic<int> turns{0};
        auto longTask = workers.Start(
            [&turns]
            {
                while (!TC::ShutdownRequested())
                {
                    ++turns;
                    TC::YieldTask();
                }
            });
        // Running before the request: one that came first would see it at once and never turn.
        while (turns.load() == 0)
            std::this_thread::yield();
        CHECK_FALSE(longTask.IsFinished());
        CHECK_FALSE(workers.ShutdownRequested());
        workers.RequestShutdown();
        CHECK(workers.ShutdownRequested());
        longTask.Join();
        CHECK(turns > 0);
        // Starting work still works after the request.
        bool later = false;
        workers.Start([&later] { later = true; }).Join();
        CHECK(later);
    }
    SECTION("on the host")
    {
        TC::Scheduler host;
        int turns = 0;
        host.Start(
                [&turns]
                {
                    while (!TC::ShutdownRequested())
                    {
                        ++turns;
                        TC::YieldTask();
                    }
                })
            .Detach();
        host.RunFor(2ms);
        host.RunFor(2ms);
        CHECK(host.LiveTasks() == 1);
        CHECK(turns > 1);
        host.RequestShutdown();
        host.RunUntilIdle();
        CHECK(host.LiveTasks() == 0);
    }
}

TEST_CASE("detached tasks move to the host and back while their handles are released",
          "[host][move]")
{
    // JoinHandle::Detach runs on this thread while the task it names may already be moving
    // between the schedulers on a worker: the release and the move must not race.
    TC::Scheduler host;
    TC::Scheduler workers(2);
    host.RunPending();
    const auto hostId = TC::Testing::ThisThreadId();
    constexpr int kTasks = 200;
    std::atomic<int> done{0};
    std::atomic<int> misplaced{0};
    for (int i = 0; i < kTasks; ++i)
        workers
            .Start(
                [&]
                {
                    TC::MoveCurrentTaskTo(host);
                    if (TC::Testing::ThisThreadId() != hostId)
                        ++misplaced;
                    TC::MoveCurrentTaskTo(workers);
                    ++done;
                })
            .Detach();
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (done < kTasks && std::chrono::steady_clock::now() < deadline)
        if (host.RunFor(1ms).ran == 0)
            host.WaitForWork(1ms);
    CHECK(done == kTasks);
    CHECK(misplaced == 0);
}
