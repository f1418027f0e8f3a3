// WaitQueue: FIFO resumes, the re-check, hand-off, timeouts, stop tokens and destruction right
// after a wait, from tasks, converted threads and coroutines; and a stress of timed waits racing
// resumes and hand-offs in which every wait returns exactly once and no token is lost.

#include "SyncTestSupport.h"

#include <TC/Diagnostics.h>
#include <TC/Synchronization/WaitQueue.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;
using TC::Duration;

namespace
{
// Tokens counted in an atomic, taken one at a time: the state a WaitQueue-based primitive keeps.
struct Tokens
{
    std::atomic<std::int64_t> count{0};
    WaitQueue queue;

    bool TryTake() noexcept
    {
        std::int64_t n = count.load();
        while (n > 0)
            if (count.compare_exchange_weak(n, n - 1))
                return true;
        return false;
    }
    bool Empty() const noexcept { return count.load() == 0; }
    void Give() noexcept
    {
        count.fetch_add(1);
        queue.ResumeOne();
    }
};

// Starts `n` waiters of `kind` that each wait once and record their status, in arrival order:
// each is queued before the next starts.
void StartQueued(Waiters& w, WaiterKind kind, WaitQueue& queue, int n,
                 std::vector<int>& order, std::mutex& orderLock, Duration timeout = Duration::Infinite())
{
    for (int i = 0; i < n; ++i)
    {
        auto record = [&order, &orderLock, i](WaitStatus status)
        {
            std::lock_guard<std::mutex> lock(orderLock);
            order.push_back(status == WaitStatus::Resumed ? i : -1 - i);
        };
        auto mustWait = []() noexcept { return true; };
        w.Start(
            kind, [&queue, record, mustWait, timeout] { record(queue.Wait(mustWait, timeout)); },
            [&queue, record, mustWait, timeout]
            {
                return Then<WaitQueue::WaitAwaiter<decltype(mustWait)>, decltype(record)>{
                    queue.WaitAsync(mustWait, timeout), record};
            });
        REQUIRE(Eventually([&] { return queue.WaiterCount() == std::size_t(i + 1); }));
    }
}
} // namespace

TEST_CASE("WaitQueue::ResumeOne resumes the oldest waiter first, of every kind", "[waitqueue]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitQueue queue;
        Waiters w;
        std::vector<int> order;
        std::mutex orderLock;
        StartQueued(w, kind, queue, 3, order, orderLock);
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 0); // nobody passes while mustWait holds
        for (int i = 0; i < 3; ++i)
        {
            CHECK(queue.ResumeOne());
            CHECK(w.WaitFinished(i + 1));
        }
        CHECK_FALSE(queue.ResumeOne()); // nobody left
        w.JoinAll();
        CHECK(order == std::vector<int>{0, 1, 2});
    }
}

TEST_CASE("WaitQueue::ResumeAll resumes every waiter queued, oldest first", "[waitqueue]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitQueue queue;
        Waiters w;
        std::vector<int> order;
        std::mutex orderLock;
        StartQueued(w, kind, queue, 4, order, orderLock);
        CHECK(queue.ResumeAll() == 4);
        CHECK(w.WaitFinished(4));
        CHECK(queue.ResumeAll() == 0);
        w.JoinAll();
        CHECK(order.size() == 4);
        CHECK_FALSE(queue.HasWaiters());
    }
}

TEST_CASE("WaitQueue's re-check ends a wait whose condition already holds", "[waitqueue]")
{
    WaitQueue queue;
    int calls = 0;
    // The re-check runs after the waiter is queued; false: it leaves at once, Resumed.
    CHECK(queue.Wait([&]() noexcept { return ++calls == 0; }) == WaitStatus::Resumed);
    CHECK(calls == 1);
    CHECK_FALSE(queue.HasWaiters());

    // A state change made before ResumeOne is seen by a wait that begins after it.
    Tokens tokens;
    tokens.Give(); // nobody waits: a fence and a look
    CHECK(tokens.queue.Wait([&]() noexcept { return tokens.Empty(); }) == WaitStatus::Resumed);
    CHECK(tokens.TryTake());
}

TEST_CASE("WaitQueue::HandOff leaves a value in the oldest waiter's context", "[waitqueue]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitQueue queue;
        CHECK_FALSE(queue.HandOff([](void*) noexcept { FAIL("no waiter: not called"); }));
        Waiters w;
        int got[2] = {0, 0};
        WaitStatus status[2] = {WaitStatus::TimedOut, WaitStatus::TimedOut};
        auto mustWait = []() noexcept { return true; };
        for (int i = 0; i < 2; ++i)
        {
            auto record = [&status, i](WaitStatus s) { status[i] = s; };
            w.Start(
                kind,
                [&, i, record] { record(queue.Wait(mustWait, Duration::Infinite(), {}, &got[i])); },
                [&, i, record]
                {
                    return Then<WaitQueue::WaitAwaiter<decltype(mustWait)>, decltype(record)>{
                        queue.WaitAsync(mustWait, Duration::Infinite(), {}, &got[i]), record};
                });
            REQUIRE(Eventually([&] { return queue.WaiterCount() == std::size_t(i + 1); }));
        }
        int next = 10;
        auto give = [&next](void* context) noexcept { *static_cast<int*>(context) = next++; };
        CHECK(queue.HandOff(give));
        CHECK(w.WaitFinished(1));
        CHECK(queue.HandOff(give));
        CHECK(w.WaitFinished(2));
        w.JoinAll();
        CHECK(got[0] == 10); // FIFO: the first waiter got the first value
        CHECK(got[1] == 11);
        CHECK(status[0] == WaitStatus::HandedOff);
        CHECK(status[1] == WaitStatus::HandedOff);
    }
}

TEST_CASE("WaitQueue: a timeout takes the waiter back, of every kind", "[waitqueue]")
{
    TC::EnableTimers();
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitQueue queue;
        Waiters w;
        std::vector<int> order;
        std::mutex orderLock;
        StartQueued(w, kind, queue, 2, order, orderLock, 20ms);
        CHECK(w.WaitFinished(2));
        w.JoinAll();
        CHECK(order.size() == 2);
        CHECK(order[0] < 0); // timed out
        CHECK(order[1] < 0);
        CHECK_FALSE(queue.HasWaiters()); // nothing of the waits is left
        CHECK_FALSE(queue.ResumeOne());
    }
    // Zero: published, re-checked, then timed out at once.
    WaitQueue queue;
    CHECK(queue.Wait([]() noexcept { return true; }, TC::Duration::Zero()) == WaitStatus::TimedOut);
    CHECK(queue.Wait([]() noexcept { return false; }, TC::Duration::Zero()) == WaitStatus::Resumed);
}

TEST_CASE("WaitQueue: a stop of the wait's token cancels it, of every kind", "[waitqueue]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitQueue queue;
        std::stop_source source;
        Waiters w;
        std::atomic<int> cancelled{0};
        auto mustWait = []() noexcept { return true; };
        auto record = [&cancelled](WaitStatus s)
        {
            if (s == WaitStatus::Cancelled)
                cancelled.fetch_add(1);
        };
        for (int i = 0; i < 2; ++i)
            w.Start(
                kind,
                [&, record] { record(queue.Wait(mustWait, Duration::Infinite(), source.get_token())); },
                [&, record]
                {
                    return Then<WaitQueue::WaitAwaiter<decltype(mustWait)>, decltype(record)>{
                        queue.WaitAsync(mustWait, Duration::Infinite(), source.get_token()), record};
                });
        REQUIRE(Eventually([&] { return queue.WaiterCount() == 2; }));
        CHECK(source.request_stop());
        CHECK(w.WaitFinished(2));
        w.JoinAll();
        CHECK(cancelled.load() == 2);
        CHECK_FALSE(queue.HasWaiters());
        // Already stopped: cancelled without queueing.
        CHECK(queue.Wait(mustWait, Duration::Infinite(), source.get_token()) == WaitStatus::Cancelled);
    }
}

TEST_CASE("WaitQueue names itself, or by the name it was given, in DumpTasks", "[waitqueue]")
{
    for (const char* name : {static_cast<const char*>(nullptr), "OrdersReady"})
    {
        WaitQueue queue(name);
        Waiters w;
        std::vector<int> order;
        std::mutex orderLock;
        StartQueued(w, WaiterKind::Task, queue, 1, order, orderLock);
        std::ostringstream dump;
        TC::DumpTasks(dump);
        CHECK(dump.str().find(name ? name : "WaitQueue") != std::string::npos);
        queue.ResumeAll();
        w.JoinAll();
    }
}

TEST_CASE("WaitQueue: the waiter may destroy the queue right after its wait", "[waitqueue]")
{
    TC::EnableTimers();
    const int rounds = static_cast<int>(Scaled(20000));
    TC::Scheduler scheduler(2);
    for (int round = 0; round < rounds; ++round)
    {
        // The creator waits on a queue in its own frame; a resumer gives a token and resumes it,
        // racing a deadline of a few microseconds. Whatever ended the wait, the creator drains
        // the resumer and destroys the queue at once (ASan names a late touch).
        auto tokens = std::make_unique<Tokens>();
        std::atomic<bool> done{false};
        auto creator = scheduler.Start(
            [&]
            {
                for (;;)
                {
                    if (tokens->TryTake())
                        break;
                    tokens->queue.Wait([&]() noexcept { return tokens->Empty(); },
                                       std::chrono::microseconds(round % 7));
                }
                tokens->queue.WaitOutResumers();
                tokens.reset();
                done.store(true);
            });
        {
            Tokens& t = *tokens;
            auto scope = t.queue.ResumerScope();
            t.Give(); // the state change and the resume, in the scope
        }
        creator.Join();
        REQUIRE(done.load());
    }
}

TEST_CASE("WaitQueue: timed waits race resumes, hand-offs and stops; each returns once",
          "[waitqueue][stress]")
{
    TC::EnableTimers();
    const std::int64_t total = Scaled(1'000'000);
    constexpr int kProducers = 2;
    Tokens tokens;
    std::atomic<std::int64_t> taken{0}, handedOff{0}, waits{0}, returns{0};
    std::atomic<std::int64_t> statuses[4] = {};
    std::stop_source stop; // stopped at the end, to cancel whoever still waits

    std::atomic<std::int64_t> lostHandOffs[3] = {}; // per kind: handed off, no value left
    auto takeOne = [&](WaitStatus status, int got, WaiterKind kind)
    {
        returns.fetch_add(1);
        statuses[static_cast<int>(status)].fetch_add(1);
        if (status == WaitStatus::HandedOff)
        {
            if (got != 1)
                lostHandOffs[static_cast<int>(kind)].fetch_add(1);
            taken.fetch_add(1);
        }
    };
    auto mustWait = [&]() noexcept { return tokens.Empty(); };
    auto blockingConsumer = [&](int seed, WaiterKind kind)
    {
        std::uint32_t x = static_cast<std::uint32_t>(seed) * 2654435761u + 1;
        while (taken.load() < total && !stop.stop_requested())
        {
            if (tokens.TryTake())
            {
                taken.fetch_add(1);
                continue;
            }
            x = x * 1664525u + 1013904223u;
            int got = 0;
            waits.fetch_add(1);
            const WaitStatus status = tokens.queue.Wait(
                mustWait, std::chrono::microseconds((x >> 24) % 50), stop.get_token(), &got);
            takeOne(status, got, kind);
        }
    };
    struct Coro
    {
        static Fire Run(TC::Scheduler& s, Tokens& tokens, std::stop_source& stop,
                        std::atomic<std::int64_t>& taken, std::atomic<std::int64_t>& waits,
                        decltype(takeOne)& take, decltype(mustWait)& mustWait, std::int64_t total,
                        std::atomic<int>& finished)
        {
            co_await s.Schedule();
            std::uint32_t x = 12345;
            while (taken.load() < total && !stop.stop_requested())
            {
                if (tokens.TryTake())
                {
                    taken.fetch_add(1);
                    continue;
                }
                x = x * 1664525u + 1013904223u;
                int got = 0;
                waits.fetch_add(1);
                const WaitStatus status = co_await tokens.queue.WaitAsync(
                    mustWait, std::chrono::microseconds((x >> 24) % 50), stop.get_token(), &got);
                take(status, got, WaiterKind::Coroutine);
            }
            finished.fetch_add(1);
        }
    };

    TC::Scheduler scheduler(2);
    std::vector<TC::JoinHandle> tasks;
    for (int i = 0; i < 2; ++i)
        tasks.push_back(scheduler.Start([&, i] { blockingConsumer(i, WaiterKind::Task); }));
    std::vector<std::thread> threads;
    threads.emplace_back([&] { blockingConsumer(7, WaiterKind::Thread); });
    std::atomic<int> coroutinesFinished{0};
    for (int i = 0; i < 2; ++i)
        Coro::Run(scheduler, tokens, stop, taken, waits, takeOne, mustWait, total,
                  coroutinesFinished);

    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
        producers.emplace_back(
            [&, p]
            {
                for (std::int64_t i = p; i < total; i += kProducers)
                {
                    // A few tokens at most in flight: the consumers keep running dry and waiting,
                    // so their deadlines race the resumes and hand-offs.
                    while (tokens.count.load() > 1)
                        std::this_thread::yield();
                    if (i % 3 != 0 || !tokens.queue.HandOff([&](void* got) noexcept {
                            *static_cast<int*>(got) = 1;
                            handedOff.fetch_add(1);
                        }))
                        tokens.Give();
                }
            });
    for (auto& p : producers)
        p.join();
    REQUIRE(Eventually([&] { return taken.load() == total; }, 120s));
    stop.request_stop();
    for (auto& t : tasks)
        t.Join();
    for (auto& t : threads)
        t.join();
    REQUIRE(Eventually([&] { return coroutinesFinished.load() == 2; }));
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        CHECK(lostHandOffs[static_cast<int>(kind)].load() == 0);
    }
    CHECK(taken.load() == total); // every token taken once: none lost, none twice
    CHECK(tokens.count.load() == 0);
    CHECK(waits.load() == returns.load()); // every wait returned, exactly once
    CHECK(statuses[static_cast<int>(WaitStatus::HandedOff)].load() == handedOff.load());
    CHECK_FALSE(tokens.queue.HasWaiters());
    INFO("waits " << waits.load() << ", timed out "
                  << statuses[static_cast<int>(WaitStatus::TimedOut)].load() << ", handed off "
                  << handedOff.load());
    CHECK(statuses[static_cast<int>(WaitStatus::TimedOut)].load() > 0);
}
