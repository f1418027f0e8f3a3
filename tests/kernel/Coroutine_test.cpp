// Coroutines on the suspend protocol: the entry lives in the awaiter, OnSuspended runs from
// await_suspend, and ResumeTask hands the coroutine to the executor current when it suspended.

#include "Detached.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
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
