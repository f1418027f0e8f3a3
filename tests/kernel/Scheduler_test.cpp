// A Scheduler's destructor and the work that reaches it meanwhile: until its last look (its last
// task finished, nothing queued) Submit and MoveCurrentTaskTo are accepted and what they hand
// over runs; from then on they throw std::logic_error. Racing submitters see one or the other,
// never a lost item (a coroutine frame LeakSanitizer would report, a count that falls short).
// And YieldTask among priorities: a yield always lets one other ready item run, of any priority.

#include "DeathTest.h"
#include "TestGate.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Gate;
using TestSupport::Scaled;

namespace
{
// A coroutine that waits to be submitted, then counts its run and frees itself.
struct Counted
{
    struct promise_type
    {
        Counted get_return_object()
        {
            return Counted{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
    std::coroutine_handle<> handle;
};

Counted Count(std::atomic<long>* ran)
{
    ++*ran;
    co_return;
}

// Counts its run after keeping its worker busy for `busy` (a steady clock spin, not a sleep).
Counted BusyItem(std::atomic<long>* ran, std::chrono::microseconds busy)
{
    const auto until = std::chrono::steady_clock::now() + busy;
    while (std::chrono::steady_clock::now() < until)
    {
    }
    ++*ran;
    co_return;
}

// Refusals whose message does not say why (checked on the test's thread: Catch is not
// thread-safe).
std::atomic<int> unclearRefusals{0};

// Submits a counted coroutine; false (the frame destroyed) if the scheduler refused it.
bool TrySubmit(Scheduler& scheduler, std::atomic<long>& ran)
{
    const std::coroutine_handle<> handle = Count(&ran).handle;
    try
    {
        scheduler.Submit(handle);
        return true;
    }
    catch (const std::logic_error& error)
    {
        handle.destroy();
        if (std::string(error.what())
                .find("Submit refused: the scheduler is stopping or stopped") == std::string::npos)
            ++unclearRefusals;
        return false;
    }
}

// Holds a worker's threadStop hook -- which runs after the destructor's last look, before it
// returns -- until the racing callers have stopped, so that none calls a destroyed scheduler.
// Gives up after 5 s (a kernel that never refuses) and asks them to stop instead.
struct StopGate
{
    std::atomic<int> running{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> gaveUp{false};
    void Hold()
    {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (running.load() != 0)
        {
            if (std::chrono::steady_clock::now() > until && !stop.exchange(true))
                gaveUp = true;
            std::this_thread::yield();
        }
    }
};
} // namespace

TEST_CASE("Submissions racing the destructor's last look are refused or run, none is lost")
{
    // One thread submits coroutines in a loop, another starts tasks, while the destructor drains
    // a task and makes its last look; each stops at its first refusal. Every accepted coroutine
    // and task must have run by the time the destructor returns.
    const long rounds = Scaled(400);
    long attempts = 0, refused = 0, accepted = 0;
    std::atomic<long> ran{0};
    for (long round = 0; round < rounds; ++round)
    {
        StopGate gate;
        SchedulerOptions options;
        options.workerCount = round % 2 == 0 ? 1 : 2;
        options.hooks.threadStop = [&gate](unsigned) { gate.Hold(); };
        std::optional<Scheduler> scheduler(std::in_place, std::move(options));
        scheduler->Start([] { std::this_thread::yield(); }).Detach();
        std::atomic<long> roundAttempts{0}, roundRefused{0};
        gate.running = 2;
        std::thread submitter(
            [&]
            {
                while (!gate.stop.load())
                {
                    ++roundAttempts;
                    if (!TrySubmit(*scheduler, ran))
                    {
                        ++roundRefused;
                        break;
                    }
                    std::this_thread::yield(); // the worker keeps up: the destructor can drain
                }
                --gate.running;
            });
        std::thread starter(
            [&]
            {
                while (!gate.stop.load())
                {
                    ++roundAttempts;
                    try
                    {
                        scheduler->Start([&ran] { ++ran; }).Detach();
                    }
                    catch (const std::logic_error&)
                    {
                        ++roundRefused;
                        break;
                    }
                    std::this_thread::yield();
                }
                --gate.running;
            });
        while (roundAttempts.load() < 20)
            std::this_thread::yield();
        scheduler.reset();
        submitter.join();
        starter.join();
        attempts += roundAttempts.load();
        refused += roundRefused.load();
        accepted = attempts - refused;
        REQUIRE(ran.load() == accepted);   // read after the destructor returned: nothing is lost
        REQUIRE_FALSE(gate.gaveUp.load()); // both were refused before the destructor returned
    }
    REQUIRE(refused == 2 * rounds);
    REQUIRE(ran.load() + refused == attempts);
    REQUIRE(unclearRefusals.load() == 0);
}

TEST_CASE("A task moving in and out of a scheduler being destroyed is refused or runs there")
{
    // A task on another scheduler moves into the one being destroyed and back, in a loop, until
    // the move is refused: every accepted move runs its part there (the destructor waits for it).
    const long rounds = Scaled(200);
    Scheduler home(1);
    for (long round = 0; round < rounds; ++round)
    {
        StopGate gate;
        SchedulerOptions options;
        options.workerCount = 1;
        options.hooks.threadStop = [&gate](unsigned) { gate.Hold(); };
        std::optional<Scheduler> target(std::in_place, std::move(options));
        std::atomic<long> moves{0}, ranThere{0};
        bool refused = false;
        gate.running = 1;
        JoinHandle mover = home.Start(
            [&]
            {
                while (!gate.stop.load())
                {
                    ++moves;
                    try
                    {
                        MoveCurrentTaskTo(*target);
                    }
                    catch (const std::logic_error&)
                    {
                        refused = true;
                        break;
                    }
                    ++ranThere;
                    MoveCurrentTaskTo(home);
                }
                --gate.running;
            });
        while (moves.load() < 5)
            std::this_thread::yield();
        target.reset();
        mover.Join();
        REQUIRE_FALSE(gate.gaveUp.load());
        REQUIRE(refused);
        REQUIRE(ranThere.load() == moves.load() - 1);
    }
}

TEST_CASE("Submit from a worker's threadStop hook, after the last look, is refused")
{
    // The hook runs as the destructor stops its workers: an item queued there would never run.
    std::atomic<long> ran{0};
    std::atomic<int> submitRefused{0}, startRefused{0};
    Scheduler* self = nullptr;
    SchedulerOptions options;
    options.workerCount = 1;
    options.hooks.threadStop = [&](unsigned)
    {
        if (!TrySubmit(*self, ran))
            ++submitRefused;
        try
        {
            self->Start([&ran] { ++ran; }).Detach();
        }
        catch (const std::logic_error&)
        {
            ++startRefused;
        }
    };
    {
        Scheduler scheduler(std::move(options));
        self = &scheduler;
        scheduler.Start([] {}).Join();
    }
    REQUIRE(submitRefused.load() == 1);
    REQUIRE(unclearRefusals.load() == 0);
    REQUIRE(startRefused.load() == 1);
    REQUIRE(ran.load() == 0);
}

TEST_CASE("Until the last task finished, submissions and moves from anywhere run; Start throws")
{
    // The destructor waits for a task held at a gate: meanwhile another thread submits, a task
    // of another scheduler moves in, and the held task itself submits once released. All run.
    // Without workers the destroying thread pumps (and becomes the host); this one never does.
    for (unsigned workers : {0u, 1u})
    {
        std::atomic<long> ran{0};
        Gate hold;
        Scheduler other(1);
        auto* scheduler = new Scheduler(workers);
        std::atomic<bool> submitInsideAccepted{false}, startThrewInside{false};
        scheduler
            ->Start(
                [&]
                {
                    SuspendTask(&hold);
                    submitInsideAccepted = TrySubmit(*scheduler, ran);
                    try
                    {
                        scheduler->Start([] {}).Detach();
                    }
                    catch (const std::logic_error&)
                    {
                        startThrewInside = true; // Start throws once the destructor started
                    }
                })
            .Detach();
        std::thread destroyer([&] { delete scheduler; });
        while (!scheduler->ShutdownRequested() || hold.suspended.load() < 1)
            std::this_thread::yield();
        REQUIRE_THROWS_AS(scheduler->Start([] {}).Detach(), std::logic_error);
        REQUIRE(TrySubmit(*scheduler, ran));
        std::atomic<bool> movedRan{false};
        JoinHandle mover = other.Start(
            [&]
            {
                MoveCurrentTaskTo(*scheduler);
                movedRan = true;
            });
        while (!movedRan.load()) // it runs there while the destructor waits for the held task
            std::this_thread::yield();
        REQUIRE(hold.OpenAll() == 1);
        mover.Join();
        destroyer.join();
        REQUIRE(ran.load() == 2);
        REQUIRE(movedRan.load());
        REQUIRE(submitInsideAccepted.load());
        REQUIRE(startThrewInside.load());
    }
}

TEST_CASE("Stop: its refusal ends the submitting threads, and a stopped scheduler keeps refusing")
{
    // The handshake that ~Scheduler alone cannot give (a call once it frees the scheduler is
    // undefined): Stop, join the threads that submit until refused, then destroy.
    for (unsigned workers : {0u, 1u, 2u})
    {
        INFO("workers: " << workers);
        std::atomic<long> ran{0};
        std::atomic<long> accepted{0};
        Scheduler scheduler(workers);
        if (workers == 0)
            scheduler.RunUntilIdle(); // this thread is its host, and Stop pumps it here
        scheduler
            .Start(
                []
                {
                    for (int i = 0; i < 100; ++i)
                        YieldTask();
                })
            .Detach();
        std::thread submitter(
            [&]
            {
                while (TrySubmit(scheduler, ran))
                {
                    ++accepted;
                    std::this_thread::yield(); // the scheduler keeps up: Stop can drain
                }
            });
        std::thread starter(
            [&]
            {
                for (;;)
                {
                    try
                    {
                        scheduler.Start([&ran] { ++ran; }).Detach();
                    }
                    catch (const std::logic_error&)
                    {
                        return;
                    }
                    ++accepted;
                    std::this_thread::yield();
                }
            });
        while (accepted.load() < 20)
            std::this_thread::yield();
        scheduler.Stop();
        submitter.join(); // both ended at their first refusal
        starter.join();
        REQUIRE(scheduler.Stopped());
        REQUIRE(ran.load() == accepted.load()); // everything admitted ran before Stop returned
        REQUIRE(scheduler.LiveTasks() == 0);
        // Stopped, it refuses every submission, and pumping finds nothing.
        REQUIRE_THROWS_AS(scheduler.Start([] {}), std::logic_error);
        REQUIRE_FALSE(TrySubmit(scheduler, ran));
        Scheduler other(1);
        std::atomic<bool> moveRefused{false};
        other
            .Start(
                [&]
                {
                    try
                    {
                        MoveCurrentTaskTo(scheduler);
                    }
                    catch (const std::logic_error&)
                    {
                        moveRefused = true;
                    }
                })
            .Join();
        REQUIRE(moveRefused.load());
        if (workers == 0)
        {
            REQUIRE(scheduler.RunUntilIdle().ran == 0);
            REQUIRE_FALSE(scheduler.WaitForWork(Duration::Infinite())); // returns: nothing can come
        }
        scheduler.Stop(); // again: returns at once
        REQUIRE(ran.load() == accepted.load());
    }
    REQUIRE(unclearRefusals.load() == 0);
}

TEST_CASE("Stop: a thread that keeps submitting faster than the work runs delays it by the "
          "backlog only")
{
    // Each item keeps its worker busy for 50 us; the submitter queues one every 5 us or so, so
    // the shared queue never runs empty while it submits. Stop must still reach its last look
    // (which ends the submitter) instead of waiting for an empty queue that never comes. The
    // watchdog stops the submitter after 30 s, so a Stop that waits for ever fails instead; not
    // sooner: each millisecond this thread is descheduled before Stop queues up to ten of work.
    for (unsigned workers : {0u, 1u, 2u})
    {
        INFO("workers: " << workers);
        std::atomic<long> ran{0};
        std::atomic<long> accepted{0};
        std::atomic<bool> gaveUp{false};
        Scheduler scheduler(workers);
        if (workers == 0)
            scheduler.RunUntilIdle(); // this thread is its host, and Stop pumps it here
        std::thread submitter(
            [&]
            {
                while (!gaveUp.load())
                {
                    const Counted item = BusyItem(&ran, std::chrono::microseconds(50));
                    try
                    {
                        scheduler.Submit(item.handle);
                    }
                    catch (const std::logic_error&)
                    {
                        item.handle.destroy();
                        return;
                    }
                    ++accepted;
                    const auto until =
                        std::chrono::steady_clock::now() + std::chrono::microseconds(5);
                    while (std::chrono::steady_clock::now() < until)
                    {
                    }
                }
            });
        while (accepted.load() < 20)
            std::this_thread::yield();
        std::atomic<bool> stopped{false};
        std::thread watchdog(
            [&]
            {
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                while (!stopped.load() && std::chrono::steady_clock::now() < until)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                if (!stopped.load())
                    gaveUp = true;
            });
        scheduler.Stop();
        stopped = true;
        watchdog.join();
        submitter.join();
        REQUIRE_FALSE(gaveUp.load());           // the refusal ended the submitter, not the watchdog
        REQUIRE(ran.load() == accepted.load()); // and everything admitted ran
    }
}

TEST_CASE("Stop from the scheduler's own task or pump is refused: it would wait for itself")
{
    auto refusal = [](Scheduler& scheduler)
    {
        try
        {
            scheduler.Stop();
        }
        catch (const std::logic_error& error)
        {
            return std::string(error.what());
        }
        return std::string("not refused");
    };
    Scheduler workers(1);
    std::string fromTask;
    workers.Start([&] { fromTask = refusal(workers); }).Join();
    CHECK(fromTask.find("Stop called from the scheduler's own task or pump") != std::string::npos);
    Scheduler host(0);
    std::string fromPump;
    JoinHandle task = host.Start([&] { fromPump = refusal(host); });
    host.RunUntilIdle();
    task.Join();
    CHECK(fromPump.find("Stop called from the scheduler's own task or pump") != std::string::npos);
    CHECK_FALSE(workers.Stopped());
    CHECK_FALSE(host.Stopped());
    host.Stop(); // from outside its pump: fine
    CHECK(host.Stopped());
}

TEST_CASE("Stop called from two threads at once: both return once it has stopped")
{
    Gate hold;
    Scheduler scheduler(1);
    scheduler.Start([&] { SuspendTask(&hold); }).Detach();
    while (hold.suspended.load() < 1)
        std::this_thread::yield();
    std::atomic<int> returned{0};
    std::thread first(
        [&]
        {
            scheduler.Stop();
            ++returned;
        });
    std::thread second(
        [&]
        {
            scheduler.Stop();
            ++returned;
        });
    while (!scheduler.ShutdownRequested())
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(returned.load() == 0); // both wait for the held task
    CHECK_FALSE(scheduler.Stopped());
    REQUIRE(hold.OpenAll() == 1);
    first.join();
    second.join();
    CHECK(returned.load() == 2);
    CHECK(scheduler.Stopped());
}

TEST_CASE("~Scheduler from the scheduler's own task terminates with the rule, instead of hanging")
{
    auto result = TestSupport::RunInChild(
        []
        {
            alarm(20); // a destructor that waits for itself ends here, without the message
            auto* scheduler = new Scheduler(1);
            scheduler->Start([scheduler] { delete scheduler; }).Join();
        });
    INFO("child stderr: " << result.stderrText);
    REQUIRE(result.aborted);
    REQUIRE(result.stderrText.find("~Scheduler called from the scheduler's own task or pump") !=
            std::string::npos);
}

TEST_CASE("A scheduler hook that throws ends the process naming the hook and the exception")
{
    // Hooks run inside the switch and the worker loop: before, a throw there ended the process
    // through std::terminate with no word of which hook or scheduler it was.
    struct Case
    {
        const char* hook;
        unsigned workers;
    };
    for (const Case c : {Case{"taskEnter", 0}, Case{"taskLeave", 0}, Case{"taskEnter", 1},
                         Case{"taskLeave", 1}, Case{"threadStart", 1}, Case{"threadStop", 1}})
    {
        auto result = TestSupport::RunInChild(
            [c]
            {
                alarm(20);
                SchedulerOptions options;
                options.workerCount = c.workers;
                options.name = "hooked";
                const std::string which = c.hook;
                auto taskHook = [which](const char* self)
                {
                    return [which, self](TaskHandle, const char*)
                    {
                        if (which == self)
                            throw std::runtime_error("boom");
                    };
                };
                options.hooks.taskEnter = taskHook("taskEnter");
                options.hooks.taskLeave = taskHook("taskLeave");
                options.hooks.threadStart = [which](unsigned)
                {
                    if (which == "threadStart")
                        throw std::runtime_error("boom");
                };
                options.hooks.threadStop = [which](unsigned)
                {
                    if (which == "threadStop")
                        throw std::runtime_error("boom");
                };
                Scheduler scheduler(std::move(options));
                JoinHandle task = scheduler.Start([] { YieldTask(); });
                if (c.workers == 0)
                    scheduler.RunUntilIdle();
                task.Join();
            });
        INFO("hook " << c.hook << ", " << c.workers
                     << " workers; child stderr: " << result.stderrText);
        CHECK(result.aborted);
        CHECK(result.stderrText.find(std::string("scheduler hook threw: SchedulerHooks::") +
                                     c.hook + " of TC::Scheduler('hooked') threw: boom") !=
              std::string::npos);
    }
}

namespace
{
// A High task yields kYields times on a scheduler of `workers` (1, or 0: pumped by this thread
// with `lowest`) while kNormal Normal tasks are ready -- queued before its first yield by this
// thread (the shared queue) or by the High task itself (its worker's own queue). Returns how
// many Normal tasks had run after each yield.
constexpr int kNormal = 5;
constexpr int kYields = 8;
std::vector<int> NormalRunAfterEachYield(unsigned workers, bool queuedByTheTask, Priority lowest)
{
    std::atomic<int> normalRan{0};
    std::vector<int> seen; // written by the High task, read after its Join
    int before = -1;
    Scheduler scheduler(workers);
    std::vector<JoinHandle> normal;
    auto startNormal = [&] {
        for (int i = 0; i < kNormal; ++i)
            normal.push_back(scheduler.Start([&] { ++normalRan; }));
    };
    // One worker: holds it until everything is queued, so that the High task runs first.
    std::atomic<bool> blocking{false}, release{false};
    JoinHandle blocker;
    if (workers != 0 && !queuedByTheTask)
    {
        blocker = scheduler.Start([&] {
            blocking = true;
            while (!release)
                std::this_thread::yield();
        });
        while (!blocking)
            std::this_thread::yield();
    }
    JoinHandle high = scheduler.Start(
        [&] {
            if (queuedByTheTask)
                startNormal();
            before = normalRan.load();
            for (int i = 0; i < kYields; ++i)
            {
                YieldTask();
                seen.push_back(normalRan.load());
            }
        },
        {.name = "high", .priority = Priority::High});
    if (!queuedByTheTask)
        startNormal();
    release = true;
    if (workers == 0)
    {
        scheduler.RunUntilIdle(lowest);
        CHECK(normalRan.load() == (lowest == Priority::High ? 0 : kNormal));
        scheduler.RunUntilIdle();
    }
    high.Join();
    for (JoinHandle& task : normal)
        task.Join();
    if (blocker.Joinable())
        blocker.Join();
    CHECK(before == 0); // High work first: no Normal task ran before the High task
    return seen;
}
} // namespace

TEST_CASE("YieldTask from a High task lets one ready Normal task run per yield")
{
    // Until they are all done; then each yield returns at once. Priorities alone would rerun
    // the High task at once, for as long as it yields, and no Normal task would ever run.
    const std::vector<int> oneEach{1, 2, 3, 4, 5, 5, 5, 5};
    for (unsigned workers : {1u, 0u})
        for (bool queuedByTheTask : {false, true})
        {
            CAPTURE(workers, queuedByTheTask);
            CHECK(NormalRunAfterEachYield(workers, queuedByTheTask, Priority::Normal) == oneEach);
        }
}

TEST_CASE("YieldTask on a host pumped for High work only runs no Normal task")
{
    const std::vector<int> none(kYields, 0);
    for (bool queuedByTheTask : {false, true})
    {
        CAPTURE(queuedByTheTask);
        CHECK(NormalRunAfterEachYield(0, queuedByTheTask, Priority::High) == none);
    }
}

TEST_CASE("YieldTask from a Normal task lets all the ready High work run first")
{
    for (unsigned workers : {1u, 0u})
    {
        CAPTURE(workers);
        std::atomic<int> highRan{0};
        int before = -1, after = -1;
        Scheduler scheduler(workers);
        std::vector<JoinHandle> high;
        JoinHandle normal = scheduler.Start([&] {
            for (int i = 0; i < 3; ++i)
                high.push_back(scheduler.Start([&] { ++highRan; }, {.priority = Priority::High}));
            before = highRan.load();
            YieldTask();
            after = highRan.load();
        });
        if (workers == 0)
            scheduler.RunUntilIdle();
        normal.Join();
        for (JoinHandle& task : high)
            task.Join();
        CHECK(before == 0);
        CHECK(after == 3);
    }
}
