// Priority levels (Critical, High, Normal, Low): ready work runs most urgent first on one worker
// and on a host pump, a pump's `lowest` runs exactly the levels up to it, Low runs once nothing
// above is ready, values past Low are refused, and a stress of mixed levels and pins across two
// workers loses nothing. A WaitLimit wait on the host runs nothing below its limit.

#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/WaitLimit.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Gate;
using TestSupport::Scaled;

namespace
{
constexpr Priority kLevels[] = {Priority::Critical, Priority::High, Priority::Normal, Priority::Low};

char Letter(Priority priority)
{
    return "CHNL"[static_cast<int>(priority)];
}

// Starts two tasks of each level, least urgent first, each appending its letter.
std::vector<JoinHandle> StartMixed(Scheduler& scheduler, std::string& order)
{
    std::vector<JoinHandle> tasks;
    for (int round = 0; round < 2; ++round)
        for (int level = 3; level >= 0; --level)
        {
            const Priority priority = kLevels[level];
            tasks.push_back(scheduler.Start([&order, priority] { order += Letter(priority); },
                                            {.priority = priority}));
        }
    return tasks;
}

// A coroutine that appends a letter when resumed (on Submit), then frees itself.
struct Note
{
    struct promise_type
    {
        Note get_return_object() { return Note{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
    std::coroutine_handle<promise_type> handle;
};

Note Append(std::string& order, char letter)
{
    order += letter;
    co_return;
}
} // namespace

TEST_CASE("One worker runs ready work most urgent level first, each level in start order")
{
    Scheduler scheduler(1);
    std::string order;
    std::vector<JoinHandle> tasks;
    // Everything is queued while the one worker is held, so the picks see all of it at once.
    std::atomic<bool> release{false};
    JoinHandle blocker = scheduler.Start([&] {
        while (!release.load())
            std::this_thread::yield();
    });
    while (scheduler.LiveTasks() != 1)
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the blocker runs
    tasks = StartMixed(scheduler, order);
    release = true;
    blocker.Join();
    for (JoinHandle& task : tasks)
        task.Join();
    CHECK(order == "CCHHNNLL");
}

TEST_CASE("A host pump's lowest runs exactly the levels up to it, most urgent first")
{
    for (int lowest = 0; lowest < 4; ++lowest)
    {
        CAPTURE(lowest);
        Scheduler host;
        std::string order;
        std::vector<JoinHandle> tasks = StartMixed(host, order);
        const PumpResult result = host.RunUntilIdle(kLevels[lowest]);
        CHECK(result.ran == static_cast<std::size_t>(2 * (lowest + 1)));
        CHECK(result.pending == 0); // of the levels it runs
        CHECK(order == std::string("CCHHNNLL").substr(0, static_cast<std::size_t>(2 * (lowest + 1))));
        CHECK(host.RunPending().ran == static_cast<std::size_t>(2 * (3 - lowest))); // default: all
        CHECK(order == "CCHHNNLL");
        for (JoinHandle& task : tasks)
            task.Join();
    }
}

TEST_CASE("Coroutines submitted at each level run by level on a host pump")
{
    Scheduler host;
    std::string order;
    for (int level = 3; level >= 0; --level)
        host.Submit(Append(order, Letter(kLevels[level])).handle, kLevels[level]);
    CHECK(host.RunPending(SIZE_MAX, Priority::Normal).ran == 3);
    CHECK(order == "CHN");
    CHECK(host.RunFor(std::chrono::milliseconds(5), Priority::Low).ran == 1);
    CHECK(order == "CHNL");
}

TEST_CASE("Low work runs whenever nothing above it is ready, also while a Normal task waits")
{
    Scheduler scheduler(1);
    std::atomic<bool> lowRan{false};
    JoinHandle normal = scheduler.Start(
        [&] {
            JoinHandle low = scheduler.Start([&] { lowRan = true; }, {.priority = Priority::Low});
            low.Join(); // the Normal task waits: nothing above Low is ready, so Low runs
        },
        {.priority = Priority::Normal});
    normal.Join();
    CHECK(lowRan.load());
}

TEST_CASE("A Priority past Low is refused with std::invalid_argument where it is passed in")
{
    const auto bad = static_cast<Priority>(4);
    Scheduler host;
    CHECK_THROWS_WITH(host.Start([] {}, {.priority = bad}),
                      Catch::Contains("Priority 4 is not a level"));
    CHECK_THROWS_AS(host.RunPending(SIZE_MAX, bad), std::invalid_argument);
    CHECK_THROWS_AS(host.RunFor(std::chrono::milliseconds(1), bad), std::invalid_argument);
    CHECK_THROWS_AS(host.RunUntilIdle(bad), std::invalid_argument);
    CHECK_THROWS_AS(host.StartBulkDetached(2, [](std::size_t) {}, {.priority = bad}),
                    std::invalid_argument);
    CHECK(host.LiveTasks() == 0);
}

TEST_CASE("Mixed priorities and pins across two workers: every task and every resume runs")
{
    // Each task yields and waits on its children; the total counts each step once.
    const long total = Scaled(1000000);
    constexpr long kStepsPerTask = 10;
    const long tasks = total / kStepsPerTask;
    Scheduler scheduler(2);
    std::atomic<long> steps{0};
    std::vector<JoinHandle> handles;
    handles.reserve(static_cast<std::size_t>(tasks));
    for (long i = 0; i < tasks; ++i)
    {
        const Priority priority = kLevels[i % 4];
        handles.push_back(scheduler.Start(
            [&steps] {
                for (long step = 0; step < kStepsPerTask; ++step)
                {
                    steps.fetch_add(1, std::memory_order_relaxed);
                    if (step % 3 == 0)
                        YieldTask();
                }
            },
            {.priority = priority, .worker = i % 3 == 0 ? static_cast<unsigned>(i / 3 % 2) : kAnyWorker}));
        if (handles.size() == 4096)
        {
            for (JoinHandle& handle : handles)
                handle.Join();
            handles.clear();
        }
    }
    for (JoinHandle& handle : handles)
        handle.Join();
    CHECK(steps.load() == tasks * kStepsPerTask);
    CHECK(scheduler.LiveTasks() == 0);
}

TEST_CASE("A host's wait under a WaitLimit runs nothing below the limit")
{
    Scheduler host;
    std::string order;
    // Queued before the wait; an unlimited wait's pump round would run them too.
    JoinHandle low = host.Start([&] { order += 'L'; }, {.priority = Priority::Low});
    JoinHandle normal = host.Start([&] { order += 'N'; }, {.priority = Priority::Normal});
    JoinHandle frame = host.Start(
        [&] {
            order += 'H';
            host.Start([&] { order += 'C'; }, {.priority = Priority::Critical}).Detach();
            YieldTask();
            order += 'h';
        },
        {.priority = Priority::High});
    {
        WaitLimit limit(Priority::High);
        {
            WaitLimit inner(Priority::Low); // nests: restored at its end
        }
        frame.Join();
    }
    CHECK(order == "HCh");
    CHECK(host.RunUntilIdle().ran == 2);
    CHECK(order == "HChNL");
    low.Join();
    normal.Join();
}

TEST_CASE("A host's limited wait sleeps past lower work until what it waits for is resumed")
{
    Scheduler host;
    Gate gate;
    std::atomic<bool> lowRan{false};
    JoinHandle low = host.Start([&] { lowRan = true; }, {.priority = Priority::Low});
    JoinHandle frame = host.Start([&] { SuspendTask(&gate); }, {.priority = Priority::High});
    CHECK(host.RunPending(SIZE_MAX, Priority::High).ran == 1); // frame waits on the gate
    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        while (gate.OpenAll() == 0)
            std::this_thread::yield();
    });
    {
        WaitLimit limit(Priority::High);
        frame.Join();
    }
    opener.join();
    CHECK_FALSE(lowRan.load());
    host.RunUntilIdle();
    CHECK(lowRan.load());
    low.Join();
    CHECK_THROWS_AS(WaitLimit(static_cast<Priority>(9)), std::invalid_argument);
}
