// Random timeouts racing resumes, across every primitive with a timed wait and every kind of
// waiter: each wait returns exactly once, true or false, and no wake is lost or duplicated --
// every permit, signal and ownership is either taken by a waiter that returned true or still
// there afterwards, and counted.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#ifndef TC_TIMED_RACE_WAITS
#define TC_TIMED_RACE_WAITS 1000000
#endif

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
// Converted threads that run posted jobs: the thread kind of waiter, without a thread per wait.
class ThreadPool
{
public:
    explicit ThreadPool(int threads)
    {
        for (int i = 0; i < threads; ++i)
            threads_.emplace_back([this] { Run(); });
    }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool()
    {
        {
            const std::lock_guard guard(lock_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (auto& thread : threads_)
            thread.join();
    }

    void Post(std::function<void()> job)
    {
        {
            const std::lock_guard guard(lock_);
            jobs_.push_back(std::move(job));
        }
        wake_.notify_one();
    }

private:
    void Run()
    {
        for (;;)
        {
            std::function<void()> job;
            {
                std::unique_lock guard(lock_);
                wake_.wait(guard, [this] { return stopping_ || !jobs_.empty(); });
                if (jobs_.empty())
                    return;
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            job();
        }
    }

    std::mutex lock_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

// One round's bookkeeping, shared by its waiters and the resumer (the test's thread).
struct Tally
{
    std::atomic<int> returned{0}; // waits that returned, true or false
    std::atomic<int> passed{0};   // of those, the ones that returned true
    std::atomic<int> inside{0};   // Mutex: owners at once
    std::atomic<bool> opened{false};
    std::atomic<int> early{0}; // a state-based wait that passed before the condition held
};

class Race
{
public:
    Race() : rng_(std::random_device{}()) { TC::EnableTimers(); }

    // Starts `wait` (a callable: bool(Duration) from a task or thread) or its coroutine form
    // `waitAsync(Duration)` as a random kind of waiter, with a random timeout; `done(passed)`
    // runs once it returned.
    template <class Wait, class WaitAsync, class Done>
    void Launch(Wait wait, WaitAsync waitAsync, Done done)
    {
        const TC::Duration timeout = RandomTimeout();
        switch (Pick(3))
        {
        case 0:
            scheduler_.Start([wait, timeout, done] { done(wait(timeout)); }).Detach();
            break;
        case 1:
            threads_.Post([wait, timeout, done] { done(wait(timeout)); });
            break;
        default:
            AsWaiter(scheduler_, waitAsync, timeout, done);
            break;
        }
    }

    // A random pause of the resumer: none, a spin, or a yield of the core.
    void Pause()
    {
        switch (Pick(4))
        {
        case 0:
            break;
        case 1:
            std::this_thread::yield();
            break;
        default:
            for (unsigned i = 0, n = Pick(3000); i < n; ++i)
                TC::detail::CpuRelax();
            break;
        }
    }

    unsigned Pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }

    std::int64_t passed = 0; // waits of all rounds that returned true

    // Waits until `n` waits of the round returned, yielding the core meanwhile (a sleep would
    // dominate a round); false after a minute.
    static bool AllReturned(const Tally& tally, int n)
    {
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        for (unsigned spins = 0; tally.returned.load() < n; ++spins)
        {
            std::this_thread::yield();
            if (spins % 1024 == 0 && std::chrono::steady_clock::now() > deadline)
                return tally.returned.load() >= n;
        }
        return true;
    }

private:
    // 0 (answers at once) one time in eight, else up to 200 microseconds: around the time a
    // resume takes to arrive, so both win often.
    TC::Duration RandomTimeout()
    {
        if (Pick(8) == 0)
            return TC::Duration::Zero();
        return std::chrono::nanoseconds(Pick(200'000));
    }

    template <class WaitAsync, class Done>
    static Fire AsWaiter(TC::Scheduler& scheduler, WaitAsync waitAsync, TC::Duration timeout,
                         Done done)
    {
        co_await scheduler.Schedule();
        done(co_await waitAsync(timeout));
    }

    std::mt19937_64 rng_;
    TC::Scheduler scheduler_{2};
    ThreadPool threads_{2};
};

// K waiters on a state-based primitive (it stays open once opened); one opening. A wait that
// returned true must find the opening done.
template <class Primitive, class Open>
int StateRound(Race& race, Primitive& primitive, int waiters, Open open)
{
    Tally tally;
    for (int i = 0; i < waiters; ++i)
        race.Launch([&](TC::Duration t) { return primitive.Wait(t); },
                    [&](TC::Duration t) { return primitive.WaitAsync(t); },
                    [&](bool passed)
                    {
                        if (passed && !tally.opened.load())
                            tally.early += 1;
                        tally.passed += passed ? 1 : 0;
                        tally.returned += 1; // the last access to the tally
                    });
    race.Pause();
    tally.opened = true;
    open();
    REQUIRE(Race::AllReturned(tally, waiters));
    REQUIRE(tally.early == 0);
    REQUIRE_FALSE(primitive.IsSuspended());
    race.passed += tally.passed;
    return waiters;
}

// K waiters on an AutoResetEvent (or its _s form, K = 1) and one Set: the signal is taken by
// exactly one waiter that returned true, or is still pending.
template <class Event>
int SignalRound(Race& race, int waiters)
{
    Tally tally;
    {
        Event event;
        for (int i = 0; i < waiters; ++i)
            race.Launch([&](TC::Duration t) { return event.Wait(t); },
                        [&](TC::Duration t) { return event.WaitAsync(t); },
                        [&](bool passed)
                        {
                            tally.passed += passed ? 1 : 0;
                            tally.returned += 1;
                        });
        race.Pause();
        event.Set();
        REQUIRE(Race::AllReturned(tally, waiters));
        REQUIRE_FALSE(event.IsSuspended());
        const int pending = event.TryWait() ? 1 : 0;
        REQUIRE(tally.passed + pending == 1);
    }
    race.passed += tally.passed;
    return waiters;
}

// K waiters on a Semaphore and R <= K single releases: every permit is taken by a waiter that
// returned true or is still available.
int PermitRound(Race& race, int waiters)
{
    Tally tally;
    Semaphore semaphore(0);
    for (int i = 0; i < waiters; ++i)
        race.Launch([&](TC::Duration t) { return semaphore.Acquire(t); },
                    [&](TC::Duration t) { return semaphore.AcquireAsync(t); },
                    [&](bool passed)
                    {
                        tally.passed += passed ? 1 : 0;
                        tally.returned += 1;
                    });
    const int releases = static_cast<int>(race.Pick(static_cast<unsigned>(waiters) + 1));
    for (int i = 0; i < releases; ++i)
    {
        race.Pause();
        semaphore.Release();
    }
    REQUIRE(Race::AllReturned(tally, waiters));
    REQUIRE(tally.passed + semaphore.Available() == releases);
    race.passed += tally.passed;
    return waiters;
}

// K waiters on a Mutex the test holds, then unlocks: one owner at a time, and the mutex ends
// free (an ownership handed to a waiter that timed out would leave it locked for good).
int OwnershipRound(Race& race, int waiters)
{
    Tally tally;
    Mutex mutex;
    mutex.Lock();
    auto owned = [&](bool passed)
    {
        if (passed)
        {
            if (tally.inside.fetch_add(1) != 0)
                tally.early += 1; // two owners at once
            tally.inside.fetch_sub(1);
            mutex.Unlock();
        }
        tally.passed += passed ? 1 : 0;
        tally.returned += 1;
    };
    for (int i = 0; i < waiters; ++i)
        race.Launch([&](TC::Duration t) { return mutex.TryLockFor(t); },
                    [&](TC::Duration t) { return mutex.LockAsync(t); }, owned);
    race.Pause();
    mutex.Unlock();
    REQUIRE(Race::AllReturned(tally, waiters));
    REQUIRE(tally.early == 0);
    REQUIRE_FALSE(mutex.IsLocked());
    race.passed += tally.passed;
    return waiters;
}

// One waiter on a Future and the value supplied: whatever the wait answered, the value is there
// for the consumer afterwards, once.
int ValueRound(Race& race)
{
    Tally tally;
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    race.Launch([&](TC::Duration t) { return future.Wait(t); },
                [&](TC::Duration t) { return future.WaitAsync(t); },
                [&](bool passed)
                {
                    if (passed && !tally.opened.load())
                        tally.early += 1;
                    tally.passed += passed ? 1 : 0;
                    tally.returned += 1;
                });
    race.Pause();
    tally.opened = true;
    promise.SetValue(7);
    REQUIRE(Race::AllReturned(tally, 1));
    REQUIRE(tally.early == 0);
    REQUIRE(future.Wait() == 7);
    race.passed += tally.passed;
    return 1;
}
} // namespace

TEST_CASE("Random timeouts racing resumes: every wait returns once, no wake lost or doubled",
          "[timed][race][stress]")
{
    const std::int64_t total =
        TCStress::Scale<std::int64_t>(TC_TIMED_RACE_WAITS, 1.0, 100, std::int64_t{1} << 40);
    Race race;
    std::int64_t waits = 0;
    std::int64_t rounds = 0;
    while (waits < total)
    {
        const int k = 1 + static_cast<int>(race.Pick(8));
        switch (rounds++ % 9)
        {
        case 0:
        {
            Latch latch(1);
            waits += StateRound(race, latch, k, [&] { latch.CountDown(); });
            break;
        }
        case 1:
        {
            WaitGroup group(1);
            waits += StateRound(race, group, k, [&] { group.Done(); });
            break;
        }
        case 2:
        {
            ManualResetEvent event;
            waits += StateRound(race, event, k, [&] { event.Set(); });
            break;
        }
        case 3:
        {
            ManualResetEvent_s event;
            waits += StateRound(race, event, 1, [&] { event.Set(); });
            break;
        }
        case 4:
            waits += SignalRound<AutoResetEvent>(race, k);
            break;
        case 5:
            waits += SignalRound<AutoResetEvent_s>(race, 1);
            break;
        case 6:
            waits += PermitRound(race, k);
            break;
        case 7:
            waits += OwnershipRound(race, k);
            break;
        default:
            waits += ValueRound(race);
            break;
        }
    }
    // The counts, for the record of a run: printed, as a passing check says nothing.
    std::printf("timed waits: %lld in %lld rounds, %lld returned true\n",
                static_cast<long long>(waits), static_cast<long long>(rounds),
                static_cast<long long>(race.passed));
    INFO(waits << " timed waits in " << rounds << " rounds, " << race.passed << " passed");
    CHECK(waits >= total);
    // Both outcomes are common, or the race was not run: timeouts and resumes met.
    CHECK(race.passed > waits / 10);
    CHECK(waits - race.passed > waits / 10);
}
