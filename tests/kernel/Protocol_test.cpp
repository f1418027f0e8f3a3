// The suspend protocol between tasks: publish after the task is off the processor, resume makes
// it runnable where it was suspended, every handle reaches ResumeTask once.

#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

using namespace TC;
using TestSupport::Gate;
using TestSupport::Mailbox;

namespace
{
// Records what the task was doing when OnSuspended ran.
struct ProbeCallback final : ISuspendCallback
{
    std::atomic<bool>* inTask = nullptr;
    std::atomic<int> calls{0};
    TaskHandle seenTask;
    std::atomic<SuspendedTask> handle{nullptr};

    void OnSuspended(SuspendedTask task) noexcept override
    {
        ++calls;
        seenTask = GetCurrentTask();
        handle.store(task);
    }
};
} // namespace

TEST_CASE("SuspendedTask is a pointer-sized, trivially copyable atomic-friendly handle")
{
    STATIC_REQUIRE(sizeof(SuspendedTask) == sizeof(void*));
    STATIC_REQUIRE(std::is_trivially_copyable_v<SuspendedTask>);
    STATIC_REQUIRE(std::atomic<SuspendedTask>::is_always_lock_free);
    SuspendedTask none = nullptr;
    REQUIRE(none == nullptr);
    REQUIRE_FALSE(static_cast<bool>(none));
    SuspendedTaskEntry entry;
    SuspendedTask some(&entry);
    REQUIRE(some != nullptr);
    REQUIRE(some.Entry() == &entry);
    // The leading member is the primitive's intrusive link.
    STATIC_REQUIRE(offsetof(SuspendedTaskEntry, next) == 0);
}

TEST_CASE("TaskHandle cannot be resumed")
{
    // ResumeTask(TaskHandle) is deleted; a SuspendedTask is not constructible from a TaskHandle.
    STATIC_REQUIRE_FALSE(std::is_constructible_v<SuspendedTask, TaskHandle>);
    STATIC_REQUIRE_FALSE(std::is_invocable_v<void (*)(SuspendedTask) noexcept, TaskHandle>);
}

TEST_CASE("OnSuspended runs after the task is off the processor, outside any task")
{
    for (unsigned workers : {0u, 1u, 2u})
    {
        CAPTURE(workers);
        Scheduler scheduler(workers);
        ProbeCallback probe;
        std::atomic<bool> taskReturned{false};
        TaskHandle self;
        auto handle = scheduler.Start([&] {
            self = GetCurrentTask();
            SuspendTask(&probe);
            taskReturned = true;
        });
        // Resume the handle once the callback has published it.
        for (;;)
        {
            if (workers == 0)
                scheduler.RunPending();
            if (SuspendedTask task = probe.handle.exchange(nullptr))
            {
                REQUIRE_FALSE(taskReturned.load());
                ResumeTask(task);
                break;
            }
            std::this_thread::yield();
        }
        if (workers == 0)
            scheduler.RunUntilIdle();
        handle.Join();
        REQUIRE(taskReturned);
        REQUIRE(probe.calls == 1);
        // Outside any task: the scheduler's thread, not the suspended task itself.
        REQUIRE(probe.seenTask != self);
    }
}

TEST_CASE("OnSuspended has run before the context switched to continues (fresh or resumed)")
{
    // One worker, three switches of a suspend: C suspends while A, never run, is next (the
    // switch enters a fresh context); A resumes C and suspends, so its switch goes straight to
    // C (a context that ran before); C ends with nothing ready (the worker loop). Each side
    // that continues must find the suspended task's OnSuspended done: the assembly switch runs
    // it inside the switch, before the other side's code (SwitchContextThen).
    Scheduler scheduler(1);
    ProbeCallback c;
    ProbeCallback a;
    int callsSeenByFreshA = -1;
    int callsSeenByResumedC = -1;
    auto taskC = scheduler.Start(
        [&]
        {
            SuspendTask(&c);
            callsSeenByResumedC = a.calls.load();
        });
    auto taskA = scheduler.Start(
        [&]
        {
            callsSeenByFreshA = c.calls.load();
            ResumeTask(c.handle.exchange(nullptr)); // C is now this worker's next task
            SuspendTask(&a);
        });
    taskC.Join();
    SuspendedTask handleA = nullptr;
    while ((handleA = a.handle.exchange(nullptr)) == nullptr)
        std::this_thread::yield();
    ResumeTask(handleA);
    taskA.Join();
    REQUIRE(callsSeenByFreshA == 1);
    REQUIRE(callsSeenByResumedC == 1);
    REQUIRE(c.calls == 1);
    REQUIRE(a.calls == 1);
}

TEST_CASE("A resume that comes during OnSuspended (the re-check) is honoured")
{
    Scheduler scheduler(1);
    struct Immediate final : ISuspendCallback
    {
        void OnSuspended(SuspendedTask task) noexcept override { ResumeTask(task); }
    } immediate;
    std::atomic<int> rounds{0};
    auto handle = scheduler.Start([&] {
        for (int i = 0; i < 1000; ++i)
        {
            SuspendTask(&immediate);
            ++rounds;
        }
    });
    handle.Join();
    REQUIRE(rounds == 1000);
}

TEST_CASE("Ping-pong through two mailboxes on one worker and across workers")
{
    for (unsigned workers : {0u, 1u, 2u, 4u})
    {
        CAPTURE(workers);
        Mailbox requests, replies;
        Scheduler scheduler(workers);
        const int rounds = 20000;
        long sum = 0;
        auto server = scheduler.Start([&] {
            for (int request; (request = requests.Take()) > 0;)
                replies.Put(request * 2);
        });
        auto client = scheduler.Start([&] {
            for (int i = 1; i <= rounds; ++i)
            {
                requests.Put(i);
                sum += replies.Take();
            }
            requests.Put(-1);
        });
        if (workers == 0)
            scheduler.RunUntilIdle();
        client.Join();
        server.Join();
        REQUIRE(sum == static_cast<long>(rounds) * (rounds + 1));
    }
}

TEST_CASE("Resume from a foreign thread makes the task runnable on its own scheduler")
{
    Mailbox box;
    Scheduler scheduler(2);
    std::atomic<Scheduler*> ranOn{nullptr};
    auto handle = scheduler.Start([&] {
        REQUIRE(box.Take() == 7);
        ranOn = Scheduler::Current();
    });
    std::thread other([&] { box.Put(7); });
    other.join();
    handle.Join();
    REQUIRE(ranOn.load() == &scheduler);
}

TEST_CASE("Join rethrows what escaped the task")
{
    Scheduler scheduler(1);
    auto handle = scheduler.Start([] { throw std::runtime_error("boom"); });
    REQUIRE_THROWS_WITH(handle.Join(), "boom");
    REQUIRE_FALSE(handle.Joinable());
    REQUIRE_THROWS_AS(handle.Join(), std::logic_error);
}

TEST_CASE("A task joins another task")
{
    Scheduler scheduler(2);
    std::atomic<int> value{0};
    auto outer = scheduler.Start([&] {
        auto inner = scheduler.Start([&] { value = 42; });
        inner.Join();
        REQUIRE(value == 42);
        value = 43;
    });
    outer.Join();
    REQUIRE(value == 43);
}

TEST_CASE("YieldTask lets the other ready tasks run")
{
    Scheduler scheduler(0);
    std::vector<int> order;
    auto a = scheduler.Start([&] {
        order.push_back(1);
        YieldTask();
        order.push_back(3);
    });
    auto b = scheduler.Start([&] { order.push_back(2); });
    scheduler.RunUntilIdle();
    a.Join();
    b.Join();
    REQUIRE(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("A JoinHandle released on another thread while its Scheduler is destroyed")
{
    // The last of the two (the handle's release, ~Scheduler) frees the scheduler's state, once:
    // a double free or a use after free shows under ASan, a lost free under LeakSanitizer.
    for (int round = 0; round < 2000; ++round)
    {
        std::optional<Scheduler> scheduler(std::in_place, 1u);
        JoinHandle handle = scheduler->Start([] {});
        while (!handle.IsFinished())
            std::this_thread::yield();
        std::atomic<bool> go{false};
        std::thread releaser(
            [&]
            {
                while (!go.load())
                {
                }
                if (round % 2 == 0)
                    handle.Join();
                else
                    handle = JoinHandle(); // the handle's release without a join
            });
        go.store(true);
        scheduler.reset();
        releaser.join();
    }
}

TEST_CASE("LiveTasks counts tasks started from anywhere, exactly once nothing moves")
{
    Scheduler scheduler(2);
    Gate gate;
    std::vector<JoinHandle> outer;
    std::mutex innerLock;
    std::vector<JoinHandle> inner;
    for (int i = 0; i < 10; ++i) // started from this thread; each starts one from its worker
        outer.push_back(scheduler.Start(
            [&]
            {
                JoinHandle child = scheduler.Start([&] { SuspendTask(&gate); });
                {
                    std::lock_guard lock(innerLock);
                    inner.push_back(std::move(child));
                }
                SuspendTask(&gate);
            }));
    while (gate.suspended.load() < 20)
        std::this_thread::yield();
    REQUIRE(scheduler.LiveTasks() == 20);
    struct ThrowsWhenMoved
    {
        ThrowsWhenMoved() = default;
        ThrowsWhenMoved(ThrowsWhenMoved&&) { throw std::runtime_error("no move"); }
        void operator()() const {}
    };
    REQUIRE_THROWS_AS(scheduler.Start(ThrowsWhenMoved{}), std::runtime_error);
    REQUIRE(scheduler.LiveTasks() == 20); // a start that failed is not counted
    REQUIRE(gate.OpenAll() == 20);
    for (JoinHandle& handle : outer)
        handle.Join();
    for (JoinHandle& handle : inner)
        handle.Join();
    REQUIRE(scheduler.LiveTasks() == 0); // a task is uncounted before its Join returns
}

TEST_CASE("LiveTasks never reads zero, nor wraps, while a relay of tasks is running")
{
    // Each task starts the next and ends: one or two live at any moment, the starts and ends
    // counted on both workers' counters. A reader that summed the starts before the ends could
    // miss a start whose end it then counts, and read zero or wrap below it.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    const int relay = 20000;
#else
    const int relay = 200000;
#endif
    Scheduler scheduler(2);
    std::atomic<int> left{relay};
    std::atomic<bool> done{false};
    std::function<void()> leg;
    leg = [&]
    {
        if (left.fetch_sub(1) > 1)
            scheduler.Start(leg).Detach();
        else
            done = true;
    };
    std::size_t zeroes = 0;
    std::size_t largest = 0;
    std::size_t reads = 0;
    scheduler.Start(leg).Detach();
    while (!done.load())
    {
        const std::size_t live = scheduler.LiveTasks();
        ++reads;
        zeroes += live == 0 && !done.load() ? 1 : 0;
        largest = std::max(largest, live);
    }
    CAPTURE(reads);
    REQUIRE(zeroes == 0);
    // A read may overcount by the starts made while it reads (a reader descheduled between its
    // two passes sees thousands), never past all of them; a wrapped difference is near 2^64.
    REQUIRE(largest <= static_cast<std::size_t>(relay));
    while (scheduler.LiveTasks() != 0)
        std::this_thread::yield();
}

TEST_CASE("Resumes made from one outside thread start in that order on a one-worker scheduler")
{
    // A resume from outside goes to the scheduler's inbox when the inbox is free and the shared
    // queue looks empty, else to the queue; the worker looks at the inbox first. Either way one
    // submitter's resumes must start in the order made. Rounds alternate between resuming while
    // the worker idles (inbox, then queue behind it) and in bursts.
    constexpr int kTasks = 64;
    Scheduler scheduler(1u);
    for (int round = 0; round < 200; ++round)
    {
        std::vector<ProbeCallback> probes(kTasks);
        std::vector<int> started;
        started.reserve(kTasks);
        std::mutex startedLock;
        std::vector<JoinHandle> handles;
        for (int i = 0; i < kTasks; ++i)
            handles.push_back(scheduler.Start(
                [&, i]
                {
                    SuspendTask(&probes[static_cast<std::size_t>(i)]);
                    std::lock_guard lock(startedLock);
                    started.push_back(i);
                }));
        for (ProbeCallback& probe : probes)
            while (probe.handle.load() == nullptr)
                std::this_thread::yield();
        for (int i = 0; i < kTasks; ++i)
        {
            ResumeTask(probes[static_cast<std::size_t>(i)].handle.load());
            if (round % 2 == 0 && i % 8 == 0)
                std::this_thread::yield(); // lets the worker take the inbox now and then
        }
        for (JoinHandle& handle : handles)
            handle.Join();
        std::vector<int> expected(kTasks);
        for (int i = 0; i < kTasks; ++i)
            expected[static_cast<std::size_t>(i)] = i;
        REQUIRE(started == expected);
    }
}
