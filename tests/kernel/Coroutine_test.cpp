// Coroutines on the suspend protocol: the entry lives in the awaiter, OnSuspended runs from
// await_suspend, and ResumeTask hands the coroutine to the executor current when it suspended.

#include "support/Detached.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <thread>

using namespace TC;
using TestSupport::Detached;

namespace
{
struct Slot final : ISuspendCallback
{
    std::atomic<SuspendedTask> task{nullptr};
    std::atomic<int> calls{0};
    void OnSuspended(SuspendedTask t) noexcept override
    {
        ++calls;
        task.store(t);
    }
};

struct ResumeAtOnce final : ISuspendCallback
{
    void OnSuspended(SuspendedTask t) noexcept override { ResumeTask(t); }
};

Detached WaitOnce(Slot* slot, std::atomic<std::thread::id>* resumedOn, std::atomic<IExecutor*>* executor)
{
    co_await SuspendTaskAsync(slot);
    *resumedOn = std::this_thread::get_id();
    *executor = CurrentExecutor();
}

Detached Loop(ResumeAtOnce* callback, int rounds, std::atomic<int>* done)
{
    for (int i = 0; i < rounds; ++i)
        co_await SuspendTaskAsync(callback);
    *done = rounds;
}
} // namespace

TEST_CASE("A coroutine resumed from a foreign thread continues on the executor it suspended on")
{
    Scheduler host(0);
    host.RunPending();
    Slot slot;
    std::atomic<std::thread::id> resumedOn;
    std::atomic<IExecutor*> executor{nullptr};
    {
        ExecutorScope scope(&host); // as the host states itself while it runs work
        WaitOnce(&slot, &resumedOn, &executor);
    }
    REQUIRE(slot.calls == 1);
    std::thread resumer([&] { ResumeTask(slot.task.exchange(nullptr)); });
    resumer.join();
    REQUIRE(executor.load() == nullptr); // not yet: it waits in the host's queue
    host.RunUntilIdle();
    REQUIRE(resumedOn.load() == std::this_thread::get_id());
    REQUIRE(executor.load() == &host);
}

TEST_CASE("A coroutine on a worker scheduler comes back on that scheduler's workers")
{
    Scheduler workers(2);
    Slot slot;
    std::atomic<std::thread::id> resumedOn;
    std::atomic<IExecutor*> executor{nullptr};
    {
        ExecutorScope scope(&workers);
        WaitOnce(&slot, &resumedOn, &executor);
    }
    ResumeTask(slot.task.exchange(nullptr));
    while (executor.load() == nullptr)
        std::this_thread::yield();
    REQUIRE(executor.load() == &workers);
    REQUIRE(resumedOn.load() != std::this_thread::get_id());
}

TEST_CASE("A resume during OnSuspended with no executor continues at once, without recursion")
{
    ResumeAtOnce callback;
    std::atomic<int> done{0};
    Loop(&callback, 1000000, &done); // a million inline resumes would overflow if they nested
    REQUIRE(done == 1000000);
}

TEST_CASE("A task and a coroutine exchange values through the seed's Mailbox callback")
{
    TestSupport::Mailbox box;
    Scheduler scheduler(1);
    std::atomic<int> got{0};
    // The coroutine side uses the same callback object via SuspendTaskAsync.
    struct Waiter
    {
        static Detached Run(TestSupport::Mailbox* mailbox, std::atomic<int>* out)
        {
            co_await SuspendTaskAsync(mailbox->Callback());
            *out = 1;
        }
    };
    Waiter::Run(&box, &got);
    auto task = scheduler.Start([&] { box.Put(3); });
    task.Join();
    REQUIRE(got == 1);
}

namespace
{
// A timed wait's callback that takes the handle back when the deadline passes (the wait then
// yields false), or hands it to a resumer (Resume).
struct TimedSlot final : ISuspendCallback
{
    std::atomic<SuspendedTask> task{nullptr};
    std::atomic<int> parks{0};
    void OnSuspended(SuspendedTask t) noexcept override
    {
        task.store(t);
        ++parks;
    }
    bool OnTimeout(SuspendedTask) noexcept override { return task.exchange(nullptr) != nullptr; }
    bool Resume() noexcept
    {
        if (SuspendedTask t = task.exchange(nullptr))
        {
            ResumeTask(t);
            return true;
        }
        return false;
    }
};

// On `scheduler`, `rounds` timed waits in a row; then notes how the last one ended.
Detached TimedWaits(Scheduler& scheduler, TimedSlot* slot, Duration timeout, int rounds,
                    std::atomic<int>* timedOut, std::atomic<int>* resumed)
{
    co_await scheduler.Schedule();
    for (int i = 0; i < rounds; ++i)
    {
        if (co_await SuspendTaskForAsync(slot, timeout))
            ++*resumed;
        else
            ++*timedOut;
    }
}
} // namespace

TEST_CASE("~Scheduler waits for the deadline of a coroutine parked on it, which then runs on it: "
          "no timer fires into a destroyed scheduler")
{
    using namespace std::chrono_literals;
    EnableTimers();
    const unsigned workers = GENERATE(0u, 2u);
    const int rounds = GENERATE(1, 3); // later waits park during the destructor's drains
    INFO("workers " << workers << ", rounds " << rounds);
    TimedSlot slot;
    std::atomic<int> timedOut{0}, resumed{0};
    const auto start = std::chrono::steady_clock::now();
    {
        Scheduler scheduler(workers);
        TimedWaits(scheduler, &slot, Duration(30ms), rounds, &timedOut, &resumed);
        if (workers == 0)
            scheduler.RunUntilIdle(); // parked now, from the host's pump
        while (slot.parks == 0)
            std::this_thread::yield();
    }
    // Every deadline passed and its resumption ran before the destructor returned.
    CHECK(timedOut == rounds);
    CHECK(std::chrono::steady_clock::now() - start >= rounds * 30ms);
    // Were a deadline still pending, it would fire into the destroyed scheduler about now.
    std::this_thread::sleep_for(60ms);
    CHECK(timedOut == rounds);
}

TEST_CASE("~Scheduler waits for a coroutine parked on it in a timed wait until a resumer "
          "delivers it, long before its deadline")
{
    using namespace std::chrono_literals;
    EnableTimers();
    const unsigned workers = GENERATE(0u, 2u);
    TimedSlot slot;
    std::atomic<int> timedOut{0}, resumed{0};
    std::thread resumer;
    const auto start = std::chrono::steady_clock::now();
    {
        Scheduler scheduler(workers);
        TimedWaits(scheduler, &slot, Duration(30s), 1, &timedOut, &resumed);
        if (workers == 0)
            scheduler.RunUntilIdle();
        while (slot.parks == 0)
            std::this_thread::yield();
        resumer = std::thread(
            [&]
            {
                std::this_thread::sleep_for(20ms);
                slot.Resume();
            });
    } // the resume arrives while the destructor waits: it is queued there and runs
    resumer.join();
    CHECK(resumed == 1);
    CHECK(std::chrono::steady_clock::now() - start < 10s);
}
