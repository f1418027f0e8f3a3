// Fault injection: every allocation (and every stack) on the paths that allocate is failed in
// turn. Each failure must surface as std::bad_alloc from the call that asked, leave the object
// usable, lose no work queued before it, and leak nothing (the asan configuration runs LSan).

#include "FaultAllocator.h"

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization/Channel.h>
#include <TC/Synchronization/Future.h>
#include <TC/Synchronization/ManualResetEvent.h>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using Faults::Armed;
using Faults::ForEveryAllocation;

namespace
{
struct AttemptResult
{
    long count;
    bool threw;
};

// Too big for a strand's inline call slot: a post of it allocates its call.
struct BigCall
{
    std::atomic<int>* ran;
    void* pad[5];
    void operator()() const { ran->fetch_add(1); }
};
} // namespace

TEST_CASE("Start: a failing allocation in the callable's copy starts nothing, loses no queued task",
          "[faults][start]")
{
    Scheduler scheduler; // host-pumped: what is queued stays queued until we pump
    std::atomic<int> ran{0};
    int expected = 0;
    std::vector<JoinHandle> handles;
    const std::vector<int> payload(100, 7); // its copy into the task allocates
    const long points = ForEveryAllocation(
        [&](long n)
        {
            for (int i = 0; i < 3; ++i)
                handles.push_back(scheduler.Start([&ran] { ran.fetch_add(1); }));
            expected += 3;
            const std::size_t liveBefore = scheduler.LiveTasks();
            auto task = [&ran, payload] { ran.fetch_add(payload[0] == 7 ? 1 : 0); };
            AttemptResult result{0, false};
            {
                Armed armed(n);
                try
                {
                    handles.push_back(scheduler.Start(task));
                    ++expected;
                }
                catch (const std::bad_alloc&)
                {
                    result.threw = true;
                }
                result.count = armed.Count();
            }
            CHECK(scheduler.LiveTasks() == liveBefore + (result.threw ? 0 : 1));
            // Usable after the failure: the same start succeeds.
            handles.push_back(scheduler.Start(task));
            ++expected;
            scheduler.RunUntilIdle();
            for (JoinHandle& handle : handles)
                handle.Join();
            handles.clear();
            REQUIRE(ran.load() == expected);
            return result;
        });
    REQUIRE(points >= 1);
}

TEST_CASE("A task whose stack cannot be allocated ends unrun; Join rethrows; nothing else is lost",
          "[faults][stack]")
{
    Faults::FailingStackAllocator stacks;
    std::atomic<int> ran{0};
    {
        SchedulerOptions options;
        options.stackAllocator = &stacks;
        options.stackSize = StackSize::Small;
        Scheduler scheduler(options);
        for (long n = 1; n <= 8; ++n)
        {
            // Eight tasks suspended at once hold eight stacks; the nth stack allocated fails.
            // A task takes its stack when it first runs, so Start itself never fails for it.
            stacks.Reset(n);
            Synchronization::ManualResetEvent gate;
            std::vector<JoinHandle> handles;
            for (int i = 0; i < 8; ++i)
                handles.push_back(scheduler.Start(
                    [&]
                    {
                        gate.Wait();
                        ran.fetch_add(1);
                    }));
            REQUIRE(scheduler.LiveTasks() == 8);
            scheduler.RunUntilIdle();
            gate.Set();
            scheduler.RunUntilIdle();
            REQUIRE(scheduler.LiveTasks() == 0);
            int failures = 0;
            for (JoinHandle& handle : handles)
            {
                try
                {
                    handle.Join();
                }
                catch (const std::bad_alloc&)
                {
                    ++failures;
                }
            }
            // The pool may already hold stacks from earlier rounds, which do not fail.
            CHECK(failures <= 1);
            CHECK(ran.load() == 8 - failures);
            ran = 0;
        }
        // A callable too large for the task block lives on a stack taken at Start, which then
        // throws and starts nothing. Sizes the pool has never seen: each needs a new stack.
        stacks.Reset(3);
        std::vector<JoinHandle> handles;
        std::array<char, 512> large{};
        int started = 0;
        int failures = 0;
        for (std::size_t size : {5 * 4096, 6 * 4096, 7 * 4096, 9 * 4096})
        {
            TaskOptions taskOptions;
            taskOptions.stackSize = size;
            try
            {
                handles.push_back(scheduler.Start([&ran, large] { ran.fetch_add(large[0] + 1); },
                                                  taskOptions));
                ++started;
            }
            catch (const std::bad_alloc&)
            {
                ++failures;
                CHECK(scheduler.LiveTasks() == static_cast<std::size_t>(started));
            }
        }
        REQUIRE(failures == 1);
        scheduler.RunUntilIdle();
        for (JoinHandle& handle : handles)
            handle.Join();
        REQUIRE(ran.load() == started);
    }
    // Every stack handed out was given back when the scheduler went.
    REQUIRE(stacks.Live() == 0);
}

TEST_CASE("Strand: a failing allocation at every step of a first post or submit loses nothing",
          "[faults][strand]")
{
    Scheduler scheduler;
    std::atomic<int> ran{0};
    int expected = 0;
    SECTION("a fresh strand, constructed and first posted to under fault")
    {
        const long points = ForEveryAllocation(
            [&](long n)
            {
                AttemptResult result{0, false};
                std::optional<Strand> strand;
                {
                    Armed armed(n);
                    try
                    {
                        strand.emplace(scheduler);
                        strand->Post(BigCall{&ran, {}});
                        ++expected;
                    }
                    catch (const std::bad_alloc&)
                    {
                        result.threw = true;
                    }
                    result.count = armed.Count();
                }
                if (!strand)
                    strand.emplace(scheduler);
                strand->Post(BigCall{&ran, {}});
                ++expected;
                scheduler.RunUntilIdle();
                REQUIRE(strand->Idle());
                REQUIRE(ran.load() == expected);
                return result;
            });
        REQUIRE(points >= 2);
    }
    SECTION("a strand with work queued: the failed post loses none of it, keeps the order")
    {
        std::vector<int> order;
        const long points = ForEveryAllocation(
            [&](long n)
            {
                order.clear();
                Strand strand(scheduler);
                for (int i = 0; i < 3; ++i)
                    strand.Post([&order, i] { order.push_back(i); });
                AttemptResult result{0, false};
                {
                    Armed armed(n);
                    try
                    {
                        strand.Post([&order, big = std::string(64, 'x')] { order.push_back(3); });
                    }
                    catch (const std::bad_alloc&)
                    {
                        result.threw = true;
                    }
                    result.count = armed.Count();
                }
                strand.Post([&order] { order.push_back(4); });
                scheduler.RunUntilIdle();
                const std::vector<int> all{0, 1, 2, 3, 4};
                const std::vector<int> lost3{0, 1, 2, 4};
                REQUIRE(order == (result.threw ? lost3 : all));
                return result;
            });
        REQUIRE(points >= 1);
    }
}

TEST_CASE("KeyedStrands: a failing allocation at every step of a key's first post loses nothing",
          "[faults][keyed]")
{
    Scheduler scheduler;
    std::atomic<int> ran{0};
    int expected = 0;
    KeyedStrands<int> strands(scheduler);
    int key = 1000;
    const long points = ForEveryAllocation(
        [&](long n)
        {
            strands.Post(1, BigCall{&ran, {}});
            strands.Post(2, BigCall{&ran, {}});
            expected += 2;
            ++key; // a key never seen: its first strand is made (or a kept one taken)
            AttemptResult result{0, false};
            {
                Armed armed(n);
                try
                {
                    strands.Post(key, BigCall{&ran, {}});
                    ++expected;
                }
                catch (const std::bad_alloc&)
                {
                    result.threw = true;
                }
                result.count = armed.Count();
            }
            strands.Post(key, BigCall{&ran, {}});
            ++expected;
            scheduler.RunUntilIdle();
            REQUIRE(strands.Idle());
            REQUIRE(ran.load() == expected);
            return result;
        });
    REQUIRE(points >= 1);
}

TEST_CASE("Channel: a failing growth throws from Send, keeps every value sent before, in order",
          "[faults][channel]")
{
    constexpr int kValues = 400; // crosses several chunk boundaries (64, 128, 256 ...)
    const long points = ForEveryAllocation(
        [&](long n)
        {
            AttemptResult result{0, false};
            std::optional<Synchronization::Channel<int>> channel;
            int sent = 0;
            {
                Armed armed(n);
                try
                {
                    channel.emplace();
                    for (; sent < kValues; ++sent)
                    {
                        const bool accepted = channel->Send(sent); // outside REQUIRE: it may throw
                        REQUIRE(accepted);
                    }
                }
                catch (const std::bad_alloc&)
                {
                    result.threw = true;
                }
                result.count = armed.Count();
            }
            if (!channel)
                channel.emplace();
            // The refused value was the caller's to resend; the channel takes it and the rest now.
            for (; sent < kValues; ++sent)
                REQUIRE(channel->Send(sent));
            for (int expected = 0; expected < kValues; ++expected)
            {
                int value = -1;
                REQUIRE(channel->TryReceive(value) == Synchronization::ChannelStatus::Ok);
                REQUIRE(value == expected);
            }
            int extra = 0;
            REQUIRE(channel->TryReceive(extra) == Synchronization::ChannelStatus::Empty);
            return result;
        });
    REQUIRE(points >= 3);
}

TEST_CASE("Channel: a receiver waiting while the sender's growth fails still gets every value",
          "[faults][channel]")
{
    Scheduler scheduler(1);
    Synchronization::Channel<int> channel;
    std::atomic<long> sum{0};
    std::atomic<int> received{0};
    auto receiver = scheduler.Start(
        [&]
        {
            while (auto value = channel.Receive())
            {
                sum.fetch_add(*value);
                received.fetch_add(1);
            }
        });
    long expectedSum = 0;
    int expectedCount = 0;
    for (long n = 1; n <= 8; ++n)
    {
        Armed armed(n);
        for (int i = 0; i < 150; ++i)
        {
            try
            {
                channel.Send(i);
            }
            catch (const std::bad_alloc&)
            {
                --i; // resend it
                continue;
            }
            expectedSum += i;
            ++expectedCount;
        }
    }
    channel.Close();
    receiver.Join();
    REQUIRE(received.load() == expectedCount);
    REQUIRE(sum.load() == expectedSum);
}

namespace
{
// A timed wait resumed by whoever finds the handle first: another thread or the timer.
class TimedSlot final : public ISuspendCallback
{
public:
    void OnSuspended(SuspendedTask task) noexcept override { slot_.store(task); }
    bool OnTimeout(SuspendedTask) noexcept override { return Claim() != nullptr; }
    SuspendedTask Claim() noexcept { return slot_.exchange(nullptr); }

private:
    std::atomic<SuspendedTask> slot_{nullptr};
};
} // namespace

TEST_CASE("SuspendTaskFor allocates nothing: timer registration cannot fail", "[faults][timer]")
{
    EnableTimers();
    Scheduler scheduler(1);
    TimedSlot slot;
    std::atomic<bool> done{false};
    std::atomic<int> resumedCount{0};
    std::atomic<int> timedOutCount{0};
    std::atomic<bool> claimable{false}; // the resumer leaves the short waits to the timer
    auto waits = [&](int rounds)
    {
        for (int i = 0; i < rounds; ++i)
        {
            // Alternately: expires at once, expires soon, or resumed by the other thread first.
            const Duration timeout = i % 3 == 0   ? Duration::Zero()
                                     : i % 3 == 1 ? Duration(std::chrono::microseconds(50))
                                                  : Duration(std::chrono::seconds(5));
            claimable.store(i % 3 == 2);
            if (SuspendTaskFor(&slot, timeout))
                resumedCount.fetch_add(1);
            else
                timedOutCount.fetch_add(1);
        }
    };
    // The scheduler's inbox takes a submission from outside while its queue is empty, so a
    // warm-up may never make the resumer or the timer thread put anything in the shared queue,
    // whose first use on a thread allocates that thread's producer: make each of them (and this
    // thread) queue something once while the one worker is held, so that the inbox stays full.
    std::atomic<bool> hold{true};
    std::atomic<bool> holding{false};
    std::atomic<bool> resumerWarm{false};
    auto holder = scheduler.Start(
        [&]
        {
            holding = true;
            while (hold.load())
                std::this_thread::yield();
        });
    while (!holding.load())
        std::this_thread::yield();
    for (int i = 0; i < 2; ++i)
        scheduler.Start([] {}).Detach(); // the inbox, then the queue
    std::thread resumer(
        [&]
        {
            for (int i = 0; i < 2; ++i)
                scheduler.Start([] {}).Detach(); // the queue: the inbox is taken
            resumerWarm = true;
            while (!done.load())
            {
                if (!claimable.load())
                    std::this_thread::yield();
                else if (SuspendedTask task = slot.Claim())
                    ResumeTask(task);
                else
                    std::this_thread::yield();
            }
        });
    while (!resumerWarm.load())
        std::this_thread::yield();
    hold = false;
    holder.Join();
    {
        // The timer thread: two waits time out while the worker sleeps in a third task, so the
        // second resume finds the inbox taken. One worker runs the three in the order started.
        TimedSlot first;
        TimedSlot second;
        auto a = scheduler.Start([&] { (void)SuspendTaskFor(&first, std::chrono::milliseconds(2)); });
        auto b = scheduler.Start([&] { (void)SuspendTaskFor(&second, std::chrono::milliseconds(2)); });
        auto c = scheduler.Start([] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
        a.Join();
        b.Join();
        c.Join();
    }
    // Warm-up: thread states, timer thread, queues, and the pool's task blocks. Twice: a task's
    // block returns to the pool only once the task has also dropped its own reference, which may
    // come after its Join returned; the second task ran after the first one's had.
    scheduler.Start([&] { waits(30); }).Join();
    scheduler.Start([&] { waits(30); }).Join();
    long counted = -1;
    {
        Faults::CountAll count;
        scheduler.Start([&] { waits(600); }).Join();
        counted = count.Count();
    }
    // The Start above allocates nothing either: its stack and task block come from the pool.
    done.store(true);
    resumer.join();
    REQUIRE(resumedCount.load() + timedOutCount.load() == 660);
    REQUIRE(timedOutCount.load() > 0);
    REQUIRE(counted == 0);
}

TEST_CASE("A converted thread's timed wait allocates nothing", "[faults][timer]")
{
    EnableTimers();
    TimedSlot slot;
    for (int i = 0; i < 20; ++i) // warm-up
        (void)SuspendTaskFor(&slot, Duration::Zero());
    long counted = -1;
    int timedOut = 0;
    {
        Faults::CountAll count;
        for (int i = 0; i < 200; ++i)
            timedOut += SuspendTaskFor(&slot, std::chrono::microseconds(i % 2 ? 0 : 20)) ? 0 : 1;
        counted = count.Count();
    }
    REQUIRE(timedOut == 200);
    REQUIRE(counted == 0);
}

TEST_CASE("Promise, Future and Then: every failing allocation throws and leaks nothing",
          "[faults][future]")
{
    using Synchronization::Future;
    using Synchronization::Promise;
    SECTION("creating a Promise")
    {
        const long points = ForEveryAllocation(
            [&](long n)
            {
                AttemptResult result{0, false};
                Armed armed(n);
                try
                {
                    Promise<std::string> promise;
                    Future<std::string> future = promise.GetFuture();
                    promise.SetValue(std::string(100, 'v')); // the string's buffer allocates too
                    result.count = armed.Count();
                    REQUIRE(future.Wait().size() == 100);
                }
                catch (const std::bad_alloc&)
                {
                    result.threw = true;
                    result.count = armed.Count();
                }
                return result;
            });
        REQUIRE(points >= 2);
    }
    SECTION("attaching a continuation: the Future is unchanged when Then throws")
    {
        const long points = ForEveryAllocation(
            [&](long n)
            {
                AttemptResult result{0, false};
                Promise<int> promise;
                Future<int> future = promise.GetFuture();
                std::optional<Future<std::size_t>> next;
                {
                    Armed armed(n);
                    try
                    {
                        next.emplace(future.Then([](int v) { return std::to_string(v).size(); }));
                    }
                    catch (const std::bad_alloc&)
                    {
                        result.threw = true;
                    }
                    result.count = armed.Count();
                }
                promise.SetValue(12345);
                if (result.threw)
                {
                    REQUIRE(future.Valid());
                    REQUIRE(future.Wait() == 12345);
                }
                else
                {
                    REQUIRE(!future.Valid());
                    REQUIRE(next->Wait() == 5);
                }
                return result;
            });
        REQUIRE(points >= 1);
    }
    SECTION("a value that cannot be built leaves the Promise unresolved and usable")
    {
        Promise<std::string> promise;
        Future<std::string> future = promise.GetFuture();
        {
            Armed armed(1);
            REQUIRE_THROWS_AS(promise.SetValue(std::string(100, 'a')), std::bad_alloc);
        }
        REQUIRE(promise.Valid());
        REQUIRE(!future.IsReady());
        promise.SetValue(std::string(100, 'b'));
        REQUIRE(future.Wait() == std::string(100, 'b'));
    }
}

TEST_CASE("A Scheduler whose construction fails part-way throws and leaves no thread behind",
          "[faults][scheduler]")
{
    const long points = ForEveryAllocation(
        [&](long n)
        {
            AttemptResult result{0, false};
            std::atomic<int> ran{0};
            {
                Armed armed(n);
                try
                {
                    SchedulerOptions options;
                    options.workerCount = 2;
                    options.name = "faulty-scheduler-name-long-enough-to-allocate";
                    Scheduler scheduler(options);
                    result.count = armed.Count();
                    scheduler.Start([&ran] { ran.fetch_add(1); }).Join();
                }
                catch (const std::bad_alloc&)
                {
                    result.threw = true;
                    result.count = armed.Count();
                }
            }
            if (!result.threw)
                REQUIRE(ran.load() == 1);
            return result;
        });
    REQUIRE(points >= 1);
}

#include "../kernel/DeathTest.h"

TEST_CASE("Start from inside a task: a failing allocation of the run queue's growth",
          "[faults][start-in-task]")
{
    // Starting a task from a task queues it on the worker's own run queue, which holds 1024
    // entries up front and then grows by doubling (LocalQueue::Grow, operator new). Fail that
    // growth: Scheduler::Start documents an exception and nothing started.
    const auto child = TestSupport::RunInChild(
        []
        {
            SchedulerOptions options;
            options.stackSize = StackSize::Small;
            options.stackGuard = StackGuard::None;
            Scheduler scheduler(options);
            {
                // Fills the scheduler's pool of task blocks (joined here, off its worker), so the
                // armed starts below take their blocks from it and the queue's growth is the
                // first allocation.
                std::vector<JoinHandle> warm;
                for (int i = 0; i < 2500; ++i)
                    warm.push_back(scheduler.Start([] {}));
                scheduler.RunUntilIdle();
                for (JoinHandle& handle : warm)
                    handle.Join();
            }
            std::atomic<int> ran{0};
            int started = 0;
            int failures = 0;
            auto parent = scheduler.Start(
                [&]
                {
                    std::vector<JoinHandle> handles;
                    handles.reserve(2500);
                    Armed armed(1); // the first allocation on this thread from here fails
                    for (int i = 0; i < 2500; ++i)
                    {
                        try
                        {
                            handles.push_back(scheduler.Start([&ran] { ran.fetch_add(1); }));
                            ++started;
                        }
                        catch (const std::bad_alloc&)
                        {
                            ++failures;
                        }
                    }
                    for (JoinHandle& handle : handles)
                        handle.Join();
                });
            scheduler.RunUntilIdle();
            parent.Join();
            std::fprintf(stderr, "started %d failures %d ran %d\n", started, failures, ran.load());
            std::_Exit(ran.load() == started && failures == 1 ? 0 : 3);
        });
    INFO(child.stderrText);
    CHECK(!child.aborted);
    CHECK(child.exitCode == 0);
}

TEST_CASE("A detached task whose stack cannot be allocated ends the process, naming the task",
          "[faults][stack]")
{
    const auto child = TestSupport::RunInChild(
        []
        {
            Faults::FailingStackAllocator stacks;
            stacks.Reset(1); // the first stack fails
            SchedulerOptions options;
            options.stackAllocator = &stacks;
            Scheduler scheduler(options);
            TaskOptions taskOptions;
            taskOptions.name = "orphan";
            scheduler.Start([] {}, taskOptions).Detach(); // Start itself succeeds
            scheduler.RunUntilIdle();
            std::_Exit(0); // not reached
        });
    INFO(child.stderrText);
    CHECK(child.aborted);
    CHECK(child.stderrText.find("detached task 'orphan' could not run") != std::string::npos);
}
