// Events: every kind from every kind of waiter, timeouts, destruction right after a wait, and
// the LIFO / creator-last order of Multiple.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
template <class Event>
void SetReleasesWaiters(int waiters, bool multiple)
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Event event;
        Waiters w;
        const int n = multiple ? waiters : 1;
        for (int i = 0; i < n; ++i)
            w.Start(
                kind, [&] { event.Wait(); }, [&] { return event.WaitAsync(); });
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0); // nobody passes an unset event
        if constexpr (requires { event.Resume(); })
            FAIL("Resume must not be public");
        for (int i = 0; i < n; ++i)
            event.Set(); // auto-reset: one per waiter; manual: the first does it
        CHECK(w.WaitFinished(n));
        w.JoinAll();
    }
}
} // namespace

TEST_CASE("ManualResetEvent releases every waiter of every kind", "[event]")
{
    SetReleasesWaiters<ManualResetEvent>(4, true);
}

TEST_CASE("AutoResetEvent releases one waiter per Set, of every kind", "[event]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        AutoResetEvent event;
        Waiters w;
        for (int i = 0; i < 3; ++i)
            w.Start(
                kind, [&] { event.Wait(); }, [&] { return event.WaitAsync(); });
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        event.Set();
        CHECK(w.WaitFinished(1));
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 1); // exactly one per Set
        // One Set at a time: two in a row, while both waiters left are still on their way to
        // the wait (slow thread starts under TSan), would keep one signal, not two.
        event.Set();
        CHECK(w.WaitFinished(2));
        event.Set();
        CHECK(w.WaitFinished(3));
        CHECK_FALSE(event.TryWait()); // every signal was consumed by a waiter
        w.JoinAll();
    }
}

TEST_CASE("AutoResetEvent keeps one signal when nobody waits", "[event]")
{
    AutoResetEvent event;
    event.Set();
    event.Set(); // does not accumulate
    CHECK(event.TryWait());
    CHECK_FALSE(event.TryWait());
    event.Set();
    event.Wait(); // the converted main thread passes at once
    event.Set();
    event.Reset();
    CHECK_FALSE(event.TryWait());
}

TEST_CASE("ManualResetEvent stays open until Reset", "[event]")
{
    ManualResetEvent event;
    CHECK_FALSE(event.TryWait());
    event.Set();
    event.Wait();
    event.Wait();
    CHECK(event.IsSet());
    event.Reset();
    CHECK_FALSE(event.TryWait());
}

TEST_CASE("ManualResetEvent resumes the waiters of one Set newest first; later ones wait",
          "[event][order]")
{
    TC::Scheduler host(0u); // pumped here: tasks run in the order they were resumed
    ManualResetEvent event;
    std::vector<int> order;
    std::vector<TC::JoinHandle> waiters;
    auto start = [&](int i)
    {
        waiters.push_back(host.Start(
            [&, i]
            {
                event.Wait();
                order.push_back(i);
            }));
    };
    for (int i = 1; i <= 3; ++i)
        start(i);
    host.RunUntilIdle();
    event.Set();
    event.Reset(); // the three were claimed by the Set: they pass although it is closed again
    start(4);
    host.RunUntilIdle();
    CHECK(order == std::vector<int>{3, 2, 1});
    CHECK(event.IsSuspended()); // the fourth waits for the next Set
    event.Set();
    host.RunUntilIdle();
    CHECK(order == std::vector<int>{3, 2, 1, 4});
    for (auto& w : waiters)
        w.Join();
}

TEST_CASE("AutoResetEvent_s and ManualResetEvent_s release their waiter of every kind",
          "[event][single]")
{
    SetReleasesWaiters<AutoResetEvent_s>(1, false);
    SetReleasesWaiters<ManualResetEvent_s>(1, false);
}

TEST_CASE("_s events: set before the wait passes at once; auto-reset clears", "[event][single]")
{
    AutoResetEvent_s autoEvent;
    autoEvent.Set();
    autoEvent.Set();
    CHECK(autoEvent.IsSet());
    autoEvent.Wait();
    CHECK_FALSE(autoEvent.IsSet());
    CHECK_FALSE(autoEvent.TryWait());

    ManualResetEvent_s manualEvent(true);
    manualEvent.Wait();
    CHECK(manualEvent.IsSet());
    manualEvent.Reset();
    CHECK_FALSE(manualEvent.TryWait());
}

TEST_CASE("AutoResetEvent_s: Reset clears a pending signal, and a Set after it counts again",
          "[event][single]")
{
    AutoResetEvent_s event(true);
    CHECK(event.IsSet());
    event.Reset();
    CHECK_FALSE(event.IsSet());
    CHECK_FALSE(event.TryWait());
    event.Reset(); // on a clear event: nothing
    event.Set();
    CHECK(event.IsSet());
    CHECK(event.TryWait());
    CHECK_FALSE(event.TryWait());

    // Sets coalesce, and one Reset clears them all.
    event.Set();
    event.Set();
    event.Reset();
    CHECK_FALSE(event.TryWait());

    // A Reset from another thread, between two Sets and the pass.
    event.Set();
    std::thread([&] { event.Reset(); }).join();
    CHECK_FALSE(event.TryWait());
    std::thread([&] { event.Set(); }).join();
    CHECK(event.TryWait());
}

TEST_CASE("AutoResetEvent_s: a Set that resumes the waiter leaves the event clear; Reset does "
          "not wake a suspended waiter",
          "[event][single]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        AutoResetEvent_s event;
        Waiters w;
        w.Start(
            kind, [&] { event.Wait(); }, [&] { return event.WaitAsync(); });
        CHECK(Eventually([&] { return event.IsSuspended(); }));
        event.Reset(); // the waiter stays suspended
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 0);
        CHECK(event.IsSuspended());
        event.Set(); // claims the waiter: the signal goes to it, none is left over
        CHECK(w.WaitFinished(1));
        w.JoinAll();
        CHECK_FALSE(event.IsSuspended());
        CHECK_FALSE(event.IsSet());
        CHECK_FALSE(event.TryWait());
        event.Set(); // and the next Set is kept for the next wait
        CHECK(event.IsSet());
        CHECK(event.TryWait());
    }
}

TEST_CASE("_s events time out from every kind of waiter, and a Set after that is kept",
          "[event][single][timeout]")
{
    TC::EnableTimers();
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        AutoResetEvent_s event;
        std::atomic<int> timedOut{0};
        {
            Waiters w;
            w.Start(
                kind, [&] { timedOut += event.Wait(5ms) ? 0 : 1; },
                [&]
                {
                    auto record = [&timedOut](bool ok) { timedOut += ok ? 0 : 1; };
                    return Then<AutoResetEvent_s::WaitForAwaiter, decltype(record)>{
                        event.WaitAsync(5ms), record};
                });
            CHECK(w.WaitFinished(1));
        }
        CHECK(timedOut == 1);
        CHECK_FALSE(event.IsSuspended());
        event.Set(); // no waiter any more: the signal stays
        CHECK(event.Wait(5ms));
    }
}

TEST_CASE("_s events may be destroyed by the waiter right after Wait returns",
          "[event][single][lifetime]")
{
    // The setter runs on another thread; the waiter frees the event as soon as it passes. Under
    // ASan any access of Set after the hand-over would be a use after free.
    const int rounds = static_cast<int>(Scaled(20000));
    for (WaiterKind kind : {WaiterKind::Task, WaiterKind::Thread})
    {
        INFO("waiter: " << Name(kind));
        TC::Scheduler scheduler(2u);
        std::atomic<AutoResetEvent_s*> autoSlot{nullptr};
        std::atomic<ManualResetEvent_s*> manualSlot{nullptr};
        std::atomic<bool> stop{false};
        std::thread setter(
            [&]
            {
                while (!stop.load())
                {
                    if (auto* e = autoSlot.exchange(nullptr))
                        e->Set();
                    if (auto* e = manualSlot.exchange(nullptr))
                        e->Set();
                }
            });
        auto body = [&]
        {
            for (int i = 0; i < rounds; ++i)
            {
                auto* a = new AutoResetEvent_s;
                autoSlot.store(a);
                a->Wait();
                delete a;
                auto* m = new ManualResetEvent_s;
                manualSlot.store(m);
                m->Wait();
                delete m;
            }
        };
        if (kind == WaiterKind::Task)
            scheduler.Start(body).Join();
        else
            std::thread(body).join();
        stop = true;
        setter.join();
    }
}

namespace
{
// A task constructs a `Primitive` of one count and waits on it, then three more tasks wait,
// then one count-down opens it; returns the order they ran in (0 the constructing task), on a
// host pump, which runs tasks in the order they were resumed.
template <class Primitive, class Open>
std::vector<int> ResumeOrderWithCreator(Open open)
{
    TC::Scheduler host(0u);
    std::vector<int> order;
    Primitive* primitive = nullptr;
    auto creator = host.Start(
        [&]
        {
            Primitive own(1); // constructed by this task
            primitive = &own;
            own.Wait();
            order.push_back(0); // then destroyed: allowed to the first waiter back
        });
    host.RunUntilIdle();
    std::vector<TC::JoinHandle> waiters;
    for (int i = 1; i <= 3; ++i)
        waiters.push_back(host.Start(
            [&, i]
            {
                primitive->Wait();
                order.push_back(i);
            }));
    host.RunUntilIdle();
    REQUIRE(order.empty());
    REQUIRE(primitive->IsSuspended());
    open(*primitive);
    host.RunUntilIdle();
    creator.Join();
    for (auto& w : waiters)
        w.Join();
    return order;
}
} // namespace

TEST_CASE("Multiple resumes newest first and its creator last", "[event][order]")
{
    // WaitGroup is a Waitable<Multiple>: the kind's order, seen through a library primitive.
    CHECK(ResumeOrderWithCreator<WaitGroup>([](WaitGroup& group) { group.Done(); }) ==
          std::vector<int>{3, 2, 1, 0});
}

TEST_CASE("Latch resumes every waiter newest first, its creator among them", "[event][order]")
{
    // A Latch is no Waitable<Multiple>: one exchange claims every waiter, so that none need be
    // last; the creator suspended first, so it comes last here too.
    CHECK(ResumeOrderWithCreator<Latch>([](Latch& latch) { latch.CountDown(); }) ==
          std::vector<int>{3, 2, 1, 0});
}

TEST_CASE("AutoResetEvent wakes the newest waiter first", "[event][order]")
{
    TC::Scheduler host(0u);
    AutoResetEvent event; // made by the main thread, which never waits on it
    std::vector<int> order;
    std::vector<TC::JoinHandle> waiters;
    for (int i = 1; i <= 3; ++i)
        waiters.push_back(host.Start(
            [&, i]
            {
                event.Wait();
                order.push_back(i);
            }));
    host.RunUntilIdle();
    event.Set();
    host.RunUntilIdle();
    CHECK(order == std::vector<int>{3});
    event.Set();
    event.Set();
    host.RunUntilIdle();
    CHECK(order == std::vector<int>{3, 2, 1});
    for (auto& w : waiters)
        w.Join();
}

TEST_CASE("Any waiter may destroy a ManualResetEvent as soon as its Wait returns",
          "[event][lifetime]")
{
    // Fifty tasks and then a thread wait; a Set from a third thread resumes the thread first (the
    // newest), which frees the event while the Set still resumes the tasks. Under ASan any access
    // of the event after Set's exchange would be a use after free.
    const int rounds = static_cast<int>(Scaled(500));
    TC::Scheduler host(0u); // pumped here, after each Set: the tasks only need to have suspended
    for (int round = 0; round < rounds; ++round)
    {
        auto* event = new ManualResetEvent;
        std::atomic<int> passed{0};
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 50; ++i)
            tasks.push_back(host.Start(
                [&, event]
                {
                    event->Wait();
                    passed.fetch_add(1);
                }));
        host.RunUntilIdle(); // every task is suspended on the event now
        std::thread destroyer(
            [&, event]
            {
                event->Wait();
                delete event;
                passed.fetch_add(1);
            });
        std::this_thread::sleep_for(std::chrono::microseconds(round % 8 == 0 ? 500 : 20));
        std::thread setter([event] { event->Set(); });
        destroyer.join();
        setter.join();
        host.RunUntilIdle();
        for (auto& t : tasks)
            t.Join();
        REQUIRE(passed == 51);
    }
}
