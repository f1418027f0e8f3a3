// Checked mode of the synchronization layer: each rule a primitive states is broken once, in a
// child process, and must fail at once with a message naming it. Linked against the checked
// build of the layer, so it proves the checks in every configuration.
//
// Each child runs a host-pumped scheduler (no worker threads): RunPending runs the tasks up to
// their suspension, so the broken rule is reached in a fixed order.

#include "DeathTest.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <coroutine>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

using namespace TC;
using namespace TC::Synchronization;
using TestSupport::RunInChild;

namespace
{
void RequireRule(const TestSupport::ChildResult& result, const char* rule)
{
    INFO("child stderr: " << result.stderrText);
    REQUIRE(result.aborted);
    REQUIRE(result.stderrText.find(std::string("TC checked mode: ") + rule) != std::string::npos);
}

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

TEST_CASE("A second waiter on a _s event fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            AutoResetEvent_s event;
            auto first = StartAndPark(scheduler, [&] { event.Wait(); });
            auto second = StartAndPark(scheduler, [&] { event.Wait(); });
        });
    RequireRule(result, "one waiter at a time on a _s event");

    auto manual = RunInChild(
        []
        {
            Scheduler scheduler(0);
            ManualResetEvent_s event;
            auto first = StartAndPark(scheduler, [&] { event.Wait(); });
            auto second = StartAndPark(scheduler, [&] { event.Wait(); });
        });
    RequireRule(manual, "one waiter at a time on a _s event");
}

TEST_CASE("A second taker on a Mailbox (a Single primitive) fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            Mailbox<int> mailbox;
            auto first = StartAndPark(scheduler, [&] { (void)mailbox.Take(); });
            auto second = StartAndPark(scheduler, [&] { (void)mailbox.Take(); });
        });
    RequireRule(result, "one waiter at a time on a Single primitive");
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

// A coroutine with no executor: resumed inline, inside the call that resumes it.
struct Inline
{
    struct promise_type
    {
        Inline get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

Inline WaitThenMaybeAdd(WaitGroup& group, bool addAtOnce)
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
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            Promise<int> promise;
            Future<int> future = promise.GetFuture();
            auto first = StartAndPark(scheduler, [&] { (void)future.Wait(); });
            auto second = StartAndPark(scheduler, [&] { (void)future.Wait(); });
        });
    RequireRule(result, "one waiter at a time on a Future");
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

TEST_CASE("Each primitive destroyed with a waiter suspended on it fails at once")
{
    const char* rule = "destroy a primitive only when nobody waits on it";
    SECTION("AutoResetEvent_s")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto event = std::make_unique<AutoResetEvent_s>();
                            auto waiter = StartAndPark(scheduler, [&] { event->Wait(); });
                            event.reset();
                        }),
                    rule);
    }
    SECTION("ManualResetEvent")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto event = std::make_unique<ManualResetEvent>();
                            auto waiter = StartAndPark(scheduler, [&] { event->Wait(); });
                            event.reset();
                        }),
                    rule);
    }
    SECTION("Latch")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto latch = std::make_unique<Latch>(1);
                            auto waiter = StartAndPark(scheduler, [&] { latch->Wait(); });
                            latch.reset();
                        }),
                    rule);
    }
    SECTION("Semaphore")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto semaphore = std::make_unique<Semaphore>(0);
                            auto waiter = StartAndPark(scheduler, [&] { semaphore->Acquire(); });
                            semaphore.reset();
                        }),
                    rule);
    }
    SECTION("Mutex")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto mutex = std::make_unique<Mutex>();
                            mutex->lock(); // the converted main thread holds it
                            auto waiter = StartAndPark(scheduler, [&] { mutex->lock(); });
                            mutex.reset();
                        }),
                    rule);
    }
    SECTION("ConditionVariable")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            Mutex mutex;
                            auto condition = std::make_unique<ConditionVariable>();
                            auto waiter = StartAndPark(scheduler,
                                                       [&]
                                                       {
                                                           std::unique_lock<Mutex> lock(mutex);
                                                           condition->Wait(lock);
                                                       });
                            condition.reset();
                        }),
                    rule);
    }
    SECTION("Barrier")
    {
        RequireRule(RunInChild(
                        []
                        {
                            Scheduler scheduler(0);
                            auto barrier = std::make_unique<Barrier>(2);
                            auto waiter =
                                StartAndPark(scheduler, [&] { barrier->ArriveAndWait(); });
                            barrier.reset();
                        }),
                    rule);
    }
}
