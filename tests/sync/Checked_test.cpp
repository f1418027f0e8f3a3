// Checked mode of the synchronization layer: each rule a primitive states is broken once, in a
// child process, and must fail at once with a message naming it. Linked against the checked
// build of the layer, so it proves the checks in every configuration.
//
// Each child runs a host-pumped scheduler (no worker threads): RunPending runs the tasks up to
// their suspension, so the broken rule is reached in a fixed order.

#include "DeathTest.h"
#include "SyncTestSupport.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/Synchronization.h>
#include <TC/Synchronization/detail/SplitGate.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>
#include <string>
#include <thread>

using namespace TC;
using namespace TC::Synchronization;
using TestSupport::RequireRule;
using TestSupport::RunInChild;

namespace
{
// Starts `body` as a task on a host-pumped scheduler and runs it until it suspends.
template <class Body>
JoinHandle StartAndPark(Scheduler& scheduler, Body body)
{
    JoinHandle handle = scheduler.Start(std::move(body));
    scheduler.RunPending();
    return handle;
}
} // namespace

TEST_CASE("The checked layer reports itself as checked")
{
    REQUIRE(IsCheckedBuild());
}

// Runs, in a child, `wait` in two tasks parked one after the other on one Primitive.
template <class Primitive, class Wait>
TestSupport::ChildResult TwoWaitersOn(Wait wait)
{
    return RunInChild(
        [&]
        {
            Scheduler scheduler(0);
            Primitive primitive;
            auto first = StartAndPark(scheduler, [&] { wait(primitive); });
            auto second = StartAndPark(scheduler, [&] { wait(primitive); });
        });
}

// A Future with its Promise alive, so that waits on it suspend.
struct PendingFuture
{
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
};

TEST_CASE("A second waiter on a _s event fails at once")
{
    const auto wait = [](auto& event) { event.Wait(); };
    RequireRule(TwoWaitersOn<AutoResetEvent_s>(wait), "one waiter at a time on a _s event");
    RequireRule(TwoWaitersOn<ManualResetEvent_s>(wait), "one waiter at a time on a _s event");
}

TEST_CASE("A second taker on a Mailbox (a Single primitive) fails at once")
{
    RequireRule(TwoWaitersOn<Mailbox<int>>([](Mailbox<int>& mailbox) { (void)mailbox.Take(); }),
                "one waiter at a time on a Single primitive");
}

TEST_CASE("A Latch counted below zero fails at once")
{
    auto result = RunInChild(
        []
        {
            Latch latch(1);
            latch.CountDown(2);
        });
    RequireRule(result, "a Latch is counted down at most its count");
}

TEST_CASE("Unlocking a Mutex that nobody holds fails at once")
{
    auto result = RunInChild(
        []
        {
            Mutex mutex;
            mutex.lock();
            mutex.unlock();
            mutex.unlock();
        });
    RequireRule(result, "unlock only a locked mutex");
}

TEST_CASE("A Semaphore's count out of range fails at once")
{
    RequireRule(RunInChild(
                    []
                    {
                        Semaphore semaphore(0);
                        semaphore.Release(-1);
                    }),
                "a semaphore's count stays in range");
    RequireRule(RunInChild([] { Semaphore semaphore(-1); }), "a semaphore's count stays in range");
    RequireRule(RunInChild(
                    []
                    {
                        Semaphore semaphore(Semaphore::kMaxPermits);
                        semaphore.Release();
                    }),
                "a semaphore's count stays in range");
    // With a waiter queued, Release hands permits over under the queue lock: the same rule.
    RequireRule(RunInChild(
                    []
                    {
                        Semaphore semaphore(0);
                        std::thread waiter([&] { semaphore.Acquire(); });
                        std::this_thread::sleep_for(std::chrono::milliseconds(100));
                        semaphore.Release(std::numeric_limits<std::int64_t>::max());
                        waiter.join();
                    }),
                "a semaphore's count stays in range");
}

TEST_CASE("A SplitGate's count or spin batch out of range fails at once")
{
    using TC::Synchronization::detail::SplitGate;
    RequireRule(RunInChild([] { SplitGate gate(-1); }), "a gate's count stays in range");
    RequireRule(RunInChild(
                    []
                    {
                        SplitGate gate(0);
                        gate.Release(-1);
                    }),
                "a gate's count stays in range");
    RequireRule(RunInChild([] { SplitGate gate(0, 0); }),
                "a gate's spin batch is at least one permit");
}

TEST_CASE("A WaitGroup taken below zero fails at once")
{
    auto result = RunInChild(
        []
        {
            WaitGroup group;
            group.Done();
        });
    RequireRule(result, "WaitGroup count never goes negative");
}

// A coroutine with no executor is resumed inline, inside the call that resumes it.
TC::SyncTests::Fire WaitThenMaybeAdd(WaitGroup& group, bool addAtOnce)
{
    co_await group.WaitAsync();
    if (addAtOnce)
        group.Add(1); // inside the Done that released us: the creator is not resumed yet
}

// The group's creator (a task) and a coroutine wait on one round; the Done that ends it resumes
// the coroutine inline first, then the creator. An Add from the coroutine at that point starts a
// new round while the creator's Wait has not returned: the misuse Go's WaitGroup also reports.
void WaitGroupRounds(bool addAtOnce)
{
    Scheduler scheduler(0);
    std::optional<WaitGroup> group;
    auto creator = StartAndPark(scheduler,
                                [&]
                                {
                                    group.emplace(1); // constructed by this task: its creator
                                    group->Wait();
                                });
    WaitThenMaybeAdd(*group, addAtOnce);
    group->Done();
    scheduler.RunPending(); // the creator returns
    creator.Join();
    group->Add(1); // every waiter of the last round has returned: a new round is fine
    group->Done();
}

TEST_CASE("A WaitGroup round started before the last round's waiters returned fails at once")
{
    RequireRule(RunInChild([] { WaitGroupRounds(true); }),
                "a WaitGroup round starts after every Wait of the last one returned");
    // The same rounds, the next one started after the waiters returned: no failure.
    const auto result = RunInChild([] { WaitGroupRounds(false); });
    INFO("child stderr: " << result.stderrText);
    REQUIRE_FALSE(result.aborted);
    REQUIRE(result.exitCode == 0);
}

TEST_CASE("Two waiters on one Future fail at once")
{
    RequireRule(TwoWaitersOn<PendingFuture>([](PendingFuture& p) { (void)p.future.Wait(); }),
                "one waiter at a time on a Future");
}

TEST_CASE("Then on a Future that has a waiter fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            Promise<int> promise;
            Future<int> future = promise.GetFuture();
            auto waiter = StartAndPark(scheduler, [&] { (void)future.Wait(); });
            auto next = std::move(future).Then([](int value) { return value; });
        });
    RequireRule(result, "Future consumed twice");
}

TEST_CASE("A Future destroyed while waited on fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            Promise<int> promise;
            auto future = std::make_unique<Future<int>>(promise.GetFuture());
            auto waiter = StartAndPark(scheduler, [&] { (void)future->Wait(); });
            future.reset();
        });
    RequireRule(result, "Future destroyed while waited on");
}

// Runs, in a child, `wait` as a task parked on a Primitive made from `args` on the heap (after
// `before` on the converted main thread), then destroys the primitive; returns how it ended.
template <class Primitive, class Before, class Wait, class... Args>
TestSupport::ChildResult DestroyWhileWaitedOn(Before before, Wait wait, Args... args)
{
    return RunInChild(
        [&]
        {
            Scheduler scheduler(0);
            auto primitive = std::make_unique<Primitive>(args...);
            before(*primitive);
            auto waiter = StartAndPark(scheduler, [&] { wait(*primitive); });
            primitive.reset();
        });
}

TEST_CASE("Each primitive destroyed with a waiter suspended on it fails at once")
{
    const char* rule = "destroy a primitive only when nobody waits on it";
    const auto nothing = [](auto&) {};
    const auto wait = [](auto& primitive) { primitive.Wait(); };
    RequireRule(DestroyWhileWaitedOn<AutoResetEvent_s>(nothing, wait), rule);
    RequireRule(DestroyWhileWaitedOn<ManualResetEvent>(nothing, wait), rule);
    RequireRule(DestroyWhileWaitedOn<WaitGroup>([](WaitGroup& group) { group.Add(1); }, wait),
                rule);
    RequireRule(DestroyWhileWaitedOn<Semaphore>(nothing, [](Semaphore& s) { s.Acquire(); }), rule);
    // The converted main thread holds the mutex; the task queues behind it.
    RequireRule(DestroyWhileWaitedOn<Mutex>([](Mutex& m) { m.lock(); }, [](Mutex& m) { m.lock(); }),
                rule);
    Mutex mutex;
    RequireRule(DestroyWhileWaitedOn<ConditionVariable>(nothing,
                                                        [&](ConditionVariable& condition)
                                                        {
                                                            std::unique_lock<Mutex> lock(mutex);
                                                            condition.Wait(lock);
                                                        }),
                rule);
    RequireRule(DestroyWhileWaitedOn<Latch>(nothing, wait, 1), rule);
    RequireRule(DestroyWhileWaitedOn<Barrier>(
                    nothing, [](Barrier& b) { b.ArriveAndWait(); }, 2),
                rule);
}

TEST_CASE("Each primitive destroyed with a timed waiter suspended on it fails at once")
{
    // Timed waiters of the multi-waiter primitives wait in a list or chain of their own.
    const char* rule = "destroy a primitive only when nobody waits on it";
    const auto timers = [](auto&) { EnableTimers(); };
    const auto wait = [](auto& primitive) { (void)primitive.Wait(std::chrono::seconds(60)); };
    RequireRule(DestroyWhileWaitedOn<AutoResetEvent>(timers, wait), rule);
    RequireRule(DestroyWhileWaitedOn<ManualResetEvent>(timers, wait), rule);
    RequireRule(DestroyWhileWaitedOn<WaitGroup>(
                    [](WaitGroup& group)
                    {
                        EnableTimers();
                        group.Add(1);
                    },
                    wait),
                rule);
    RequireRule(DestroyWhileWaitedOn<Latch>(timers, wait, 1), rule);
}

TEST_CASE("Diagnostics name the primitive a creator waits on, not the creator's callback")
{
    // The creator of a Multiple object waits through a callback of its own; the registry of
    // suspended waiters, hang reports and DumpTasks name the object it waits on.
    std::atomic<WaitGroup*> created{nullptr};
    Scheduler scheduler(1);
    auto creator = scheduler.Start(
        [&] {
            WaitGroup group(1);
            created = &group;
            group.Wait();
        },
        {.name = "creator"});
    std::vector<SuspendedWaiterInfo> waiters;
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (waiters.empty() && std::chrono::steady_clock::now() < giveUp)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        waiters = SnapshotSuspendedWaiters();
    }
    REQUIRE(waiters.size() == 1);
    CHECK(waiters[0].waiter == "task 'creator'");
    CHECK(waiters[0].waitsOn == "TC::Synchronization::WaitGroup");
    std::ostringstream dump;
    DumpTasks(dump);
    INFO(dump.str());
    CHECK(dump.str().find("'creator' suspended") != std::string::npos);
    CHECK(dump.str().find("waits on TC::Synchronization::WaitGroup at 0x") != std::string::npos);
    CHECK(dump.str().find("CreatorCallback") == std::string::npos);
    created.load()->Done();
    creator.Join();
}
