// Converted threads: any OS thread waits through the same protocol as a task, on the same
// callback objects, explicitly converted or on its first wait.

#include "DeathTest.h"
#include "support/Detached.h"
#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace TC;
using TestSupport::Detached;
using TestSupport::Mailbox;

namespace
{
// Counts waiters on one callback object, whatever kind they are.
struct SharedGate final : ISuspendCallback
{
    std::atomic<SuspendedTask> slots[3];
    std::atomic<int> published{0};
    void OnSuspended(SuspendedTask task) noexcept override
    {
        for (auto& slot : slots)
        {
            SuspendedTask empty = nullptr;
            if (slot.compare_exchange_strong(empty, task))
                break;
        }
        ++published;
    }
    void OpenAll()
    {
        for (auto& slot : slots)
            if (SuspendedTask task = slot.exchange(nullptr))
                ResumeTask(task);
    }
};

Detached CoroutineWaiter(SharedGate* gate, std::atomic<int>* done)
{
    co_await SuspendTaskAsync(gate);
    ++*done;
}
} // namespace

TEST_CASE("The main thread waits on a mailbox filled by a task")
{
    Mailbox box;
    Scheduler scheduler(1);
    auto task = scheduler.Start([&] { box.Put(5); });
    REQUIRE(box.Take() == 5);
    task.Join();
}

TEST_CASE("A task, a converted thread and a coroutine wait on the same callback object")
{
    Scheduler scheduler(1);
    SharedGate gate;
    std::atomic<int> done{0};
    auto task = scheduler.Start([&] {
        SuspendTask(&gate);
        ++done;
    });
    std::thread thread([&] {
        ConvertCurrentThread();
        SuspendTask(&gate);
        ++done;
    });
    CoroutineWaiter(&gate, &done); // no executor here: resumed inline by whoever resumes it
    while (gate.published < 3)
        std::this_thread::yield();
    REQUIRE(done == 0);
    gate.OpenAll();
    task.Join();
    thread.join();
    REQUIRE(done == 3);
}

TEST_CASE("GetCurrentTask names a converted thread, stably, and differs per thread")
{
    TaskHandle here = GetCurrentTask();
    REQUIRE(here);
    REQUIRE(GetCurrentTask() == here);
    REQUIRE_FALSE(IsInsideTask());
    TaskHandle there;
    std::thread other([&] { there = GetCurrentTask(); });
    other.join();
    REQUIRE(there != here);
}

namespace
{
// What `query` answers on a new plain thread. Each thread records what it saw; the assertions
// run on the test's thread (Catch2's are not thread-safe).
bool OnPlainThread(bool (*query)() noexcept)
{
    bool answer = false;
    std::thread plain([&] { answer = query(); });
    plain.join();
    return answer;
}
} // namespace

TEST_CASE("WaitRunsOtherWork: in a task and on a host thread (or one that created a host "
          "scheduler), not on a plain thread")
{
    CHECK_FALSE(OnPlainThread(&WaitRunsOtherWork));
    Scheduler workers(1);
    bool inTask = false;
    workers.Start([&] { inTask = WaitRunsOtherWork(); }).Join();
    CHECK(inTask);
    bool beforePumping = false, inPumpedTask = false, whileHosting = false, afterHost = true;
    std::thread hosting(
        [&]
        {
            std::optional<Scheduler> host(std::in_place, 0u);
            // The creating thread's waits pump it until another thread pumps it first.
            beforePumping = WaitRunsOtherWork();
            host->Start([&] { inPumpedTask = WaitRunsOtherWork(); }).Detach();
            (void)host->RunPending(); // this thread hosts it from now on
            whileHosting = WaitRunsOtherWork(); // its waits pump the host
            host.reset();
            afterHost = WaitRunsOtherWork(); // the host is gone
        });
    hosting.join();
    CHECK(beforePumping);
    CHECK(inPumpedTask);
    CHECK(whileHosting);
    CHECK_FALSE(afterHost);
}

TEST_CASE("SpinBeforeWaitHoldsNothingUp: on a plain thread and in an idle worker's task only")
{
    CHECK(OnPlainThread(&SpinBeforeWaitHoldsNothingUp));

    Scheduler workers(1);
    bool alone = false, besideLocal = true, localRan = false, afterLocal = false;
    workers
        .Start(
            [&]
            {
                alone = SpinBeforeWaitHoldsNothingUp();
                JoinHandle local = workers.Start([&] { localRan = true; }); // this worker's queue
                besideLocal = SpinBeforeWaitHoldsNothingUp();
                local.Join();
                afterLocal = SpinBeforeWaitHoldsNothingUp();
            })
        .Join();
    CHECK(alone);
    CHECK(localRan);
    CHECK_FALSE(besideLocal);
    CHECK(afterLocal);

    // Work submitted from another thread while the task runs: in the scheduler's shared queue.
    std::atomic<bool> submitted{false};
    bool besideShared = true;
    JoinHandle looking = workers.Start(
        [&]
        {
            while (!submitted.load(std::memory_order_acquire))
                std::this_thread::yield();
            besideShared = SpinBeforeWaitHoldsNothingUp();
        });
    JoinHandle queued = workers.Start([] {});
    submitted.store(true, std::memory_order_release);
    looking.Join();
    queued.Join();
    CHECK_FALSE(besideShared);

    bool inPumpedTask = true, whileHosting = true;
    std::thread hosting(
        [&]
        {
            Scheduler host(0u);
            host.Start([&] { inPumpedTask = SpinBeforeWaitHoldsNothingUp(); }).Detach();
            (void)host.RunPending(); // this thread hosts it from now on
            whileHosting = SpinBeforeWaitHoldsNothingUp();
        });
    hosting.join();
    CHECK_FALSE(inPumpedTask);
    CHECK_FALSE(whileHosting);
}

TEST_CASE("Many threads ping-pong with tasks through mailboxes")
{
    std::vector<std::unique_ptr<Mailbox>> requests, replies;
    Scheduler scheduler(2);
    const int pairs = 4;
    const int rounds = static_cast<int>(TestSupport::Scaled(20000));
    std::vector<JoinHandle> servers;
    for (int i = 0; i < pairs; ++i)
    {
        requests.push_back(std::make_unique<Mailbox>());
        replies.push_back(std::make_unique<Mailbox>());
    }
    for (int i = 0; i < pairs; ++i)
    {
        servers.push_back(scheduler.Start([&, i] {
            for (int request; (request = requests[i]->Take()) > 0;)
                replies[i]->Put(request + 1);
        }));
    }
    std::vector<std::thread> clients;
    std::atomic<long> total{0};
    for (int i = 0; i < pairs; ++i)
        clients.emplace_back([&, i] {
            long sum = 0;
            for (int r = 1; r <= rounds; ++r)
            {
                requests[i]->Put(r);
                sum += replies[i]->Take();
            }
            requests[i]->Put(-1);
            total += sum;
        });
    for (auto& client : clients)
        client.join();
    for (auto& server : servers)
        server.Join();
    REQUIRE(total == pairs * (static_cast<long>(rounds) * (rounds + 1) / 2 + rounds));
}

namespace
{
// A coroutine whose exception escapes its resume() (unhandled_exception rethrows), as a user's
// own coroutine type may do: a pump that runs it throws.
struct Rethrowing
{
    struct promise_type
    {
        Rethrowing get_return_object() noexcept
        {
            return {std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() { throw; }
    };
    std::coroutine_handle<promise_type> handle;
};

Rethrowing ThrowWhenRun(std::atomic<bool>* ran)
{
    ran->store(true);
    throw std::runtime_error("pumped work threw");
    co_return;
}
} // namespace

TEST_CASE("Work that throws while a host thread's wait pumps it is a named failure, not a dangling "
          "waiter")
{
    // Before: the exception unwound the wait while its entry was published (and its deadline in
    // the timer heap), so the later ResumeTask and the timer thread wrote to a dead stack.
    const auto result = TestSupport::RunInChild(
        []
        {
            EnableTimers();
            Scheduler host(0);
            (void)host.RunPending(); // this thread hosts it from now on
            std::atomic<bool> ran{false};
            host.Submit(ThrowWhenRun(&ran).handle);
            TestSupport::Gate gate;
            // Opens the gate (the later ResumeTask a wait unwound by the throw would leave to
            // a dead stack) only once the work ran: an earlier one, or the deadline, would end
            // the wait before it pumped anything on a descheduled child.
            std::thread opener(
                [&]
                {
                    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::minutes(1);
                    while (!ran.load() && std::chrono::steady_clock::now() < giveUp)
                        std::this_thread::yield();
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    gate.OpenAll();
                });
            try
            {
                (void)SuspendTaskFor(&gate, std::chrono::hours(1));
            }
            catch (const std::exception& error)
            {
                std::fprintf(stderr, "escaped the wait: %s\n", error.what());
            }
            opener.join();
        });
    TestSupport::RequireRule(result, "work threw inside a wait");
    REQUIRE(result.stderrText.find("pumped work threw") != std::string::npos);
}
