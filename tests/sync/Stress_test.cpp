// Stress: each primitive driven across worker threads, converted threads and coroutines with
// millions of operations in Release (scaled down in Debug and under sanitizers). Checked mode
// catches double resumes; counts catch lost or duplicated wake-ups; a lost wake-up hangs, which
// the per-test deadline reports.

#include "PermitStress.h"
#include "SyncTestSupport.h"

#include <TC/Synchronization.h>
#include <TC/detail/SpinLock.h> // CpuRelax

#include <catch2/catch.hpp>

#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
// Runs `pinger` in a task of `scheduler` and `ponger` on a thread of its own (acrossThread) or in
// a second task, and returns once both have.
template <class Pinger, class Ponger>
void RunPair(TC::Scheduler& scheduler, Pinger& pinger, Ponger& ponger, bool acrossThread)
{
    auto a = scheduler.Start(pinger);
    if (acrossThread)
    {
        std::thread b(ponger);
        a.Join();
        b.join();
    }
    else
    {
        auto b = scheduler.Start(ponger);
        a.Join();
        b.Join();
    }
}

// Two parties alternate through a pair of events `rounds` times: one in a task, one on a thread
// (cross-thread wakes) or both in tasks.
template <class Event>
void PingPong(std::int64_t rounds, bool acrossThread)
{
    Event ping;
    Event pong;
    TC::Scheduler scheduler(2u);
    auto pinger = [&]
    {
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            ping.Set();
            pong.Wait();
        }
    };
    auto ponger = [&]
    {
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            ping.Wait();
            pong.Set();
        }
    };
    RunPair(scheduler, pinger, ponger, acrossThread);
}
} // namespace

TEST_CASE("Stress: event ping-pong, tasks and threads", "[stress][event]")
{
    const std::int64_t rounds = Scaled(200000);
    PingPong<AutoResetEvent_s>(rounds, false);
    PingPong<AutoResetEvent_s>(rounds / 4, true);
    PingPong<AutoResetEvent>(rounds, false);
    PingPong<AutoResetEvent>(rounds / 4, true);
}

namespace
{
// As PingPong, but each party constructs the event it waits on, so every wait that suspends goes
// through the creator's own slot and its re-check (SuspendableBase<Multiple>): the pinger is a
// task, the ponger a thread or a second task.
void CreatorPingPong(std::int64_t rounds, bool acrossThread)
{
    std::optional<AutoResetEvent> ping; // the ponger waits on it and constructs it
    std::optional<AutoResetEvent> pong; // the pinger waits on it and constructs it
    std::atomic<int> constructed{0};
    TC::Scheduler scheduler(2u);
    auto pinger = [&]
    {
        pong.emplace();
        constructed.fetch_add(1);
        while (constructed.load() < 2)
            TC::YieldTask();
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            ping->Set();
            pong->Wait();
        }
    };
    auto ponger = [&]
    {
        ping.emplace();
        constructed.fetch_add(1);
        while (constructed.load() < 2)
        {
            if (TC::IsInsideTask())
                TC::YieldTask();
            else
                std::this_thread::yield();
        }
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            ping->Wait();
            pong->Set();
        }
    };
    RunPair(scheduler, pinger, ponger, acrossThread);
    CHECK_FALSE(ping->IsSuspended());
    CHECK_FALSE(pong->IsSuspended());
}

// Two parties alternate through two ManualResetEvents, each closing the gate it waits on right
// after passing it and before it opens the other's. Only the waiter resets its gate, so a wait
// that returns while its gate is closed was resumed by an earlier Set than the one it waited
// for: counted as `early`, and the waiter waits again for its own Set. (A ManualResetEvent whose
// Set stored the state first and looked for waiters afterwards did that when the setter was
// preempted in between; without the second wait, the extra pass left the parties a round apart
// and one of them waiting forever.)
void GatePingPong(std::int64_t rounds, bool acrossThread)
{
    ManualResetEvent ping; // the ponger waits on it
    ManualResetEvent pong; // the pinger waits on it
    std::atomic<std::int64_t> early{0};
    TC::Scheduler scheduler(2u);
    auto pass = [&](ManualResetEvent& gate)
    {
        gate.Wait();
        while (!gate.IsSet()) // resumed by an earlier Set: count it, and wait for ours
        {
            early.fetch_add(1);
            gate.Wait();
        }
        gate.Reset(); // before the Set below: the other side opens it again only after that
    };
    auto pinger = [&]
    {
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            ping.Set();
            pass(pong);
        }
    };
    auto ponger = [&]
    {
        for (std::int64_t i = 0; i < rounds; ++i)
        {
            pass(ping);
            pong.Set();
        }
    };
    RunPair(scheduler, pinger, ponger, acrossThread);
    CHECK(early == 0);
    CHECK_FALSE(ping.IsSuspended());
    CHECK_FALSE(pong.IsSuspended());
}
} // namespace

TEST_CASE("Stress: event ping-pong through the creators' own slots", "[stress][event]")
{
    const std::int64_t rounds = Scaled(100000);
    CreatorPingPong(rounds, false);
    CreatorPingPong(rounds / 4, true);
}

TEST_CASE("Stress: ManualResetEvent gates closed by their waiters; no Set lets a later wait pass",
          "[stress][event]")
{
    const std::int64_t rounds = Scaled(200000);
    GatePingPong(rounds, false);
    GatePingPong(rounds / 4, true);
}

TEST_CASE("Stress: AutoResetEvent as a token among many waiters", "[stress][event]")
{
    // Four tasks, a thread and two coroutines pass one token around: every Set lets exactly one
    // holder through, so the critical section never overlaps and every pass is counted.
    const std::int64_t passes = Scaled(400000);
    AutoResetEvent token(true);
    std::atomic<std::int64_t> done{0};
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    auto critical = [&]
    {
        if (inside.fetch_add(1) != 0)
            overlap = true;
        inside.fetch_sub(1);
        done.fetch_add(1);
    };
    Waiters w;
    auto blocking = [&]
    {
        while (done.load() < passes)
        {
            token.Wait();
            critical();
            token.Set();
        }
    };
    struct Coro
    {
        static Fire Run(Waiters& w, AutoResetEvent& token, std::atomic<std::int64_t>& done,
                        std::int64_t passes, decltype(critical) critical, std::atomic<int>& left)
        {
            co_await w.GetScheduler().Schedule();
            while (done.load() < passes)
            {
                co_await token;
                critical();
                token.Set();
            }
            left.fetch_sub(1);
        }
    };
    std::atomic<int> coroutines{2};
    for (int i = 0; i < 4; ++i)
        w.Start(WaiterKind::Task, blocking, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, blocking, [] { return std::suspend_never{}; });
    Coro::Run(w, token, done, passes, critical, coroutines);
    Coro::Run(w, token, done, passes, critical, coroutines);
    CHECK(w.WaitFinished(5, 120s));
    CHECK(Eventually([&] { return coroutines.load() == 0; }, 60s));
    CHECK_FALSE(overlap);
    CHECK(done >= passes);
}

namespace
{
// Each round the producer writes 2r-1 and Sets, writes 2r and Sets again, then announces the
// round; the consumer passes the event (TryWait, spinning on its own core so that both sides
// race) and reads the value after each pass, until it reads 2r. Sets do not accumulate, so the
// second Set often finds the first one's signal still there -- and then the waiter that
// consumes it must see 2r, or the event must still be set. A round is lost when the second Set
// has returned (announced), no signal is left, and the last pass read 2r-1: the consumer would
// wait for a wake-up that never comes. The value is a relaxed atomic: only the event orders it.
template <class Event>
std::int64_t CoalescedSetsLost(std::int64_t rounds)
{
    Event event;
    std::atomic<std::int64_t> value{0};
    std::atomic<std::int64_t> announced{0};
    std::atomic<std::int64_t> acknowledged{0};
    std::int64_t lost = 0;
    std::thread consumer(
        [&]
        {
            for (std::int64_t round = 1; round <= rounds; ++round)
            {
                for (std::int64_t seen = 0; seen != 2 * round;)
                {
                    // Read first: when it says announced, both Sets happened before the pass.
                    const bool bothSet = announced.load(std::memory_order_acquire) == round;
                    if (event.TryWait())
                        seen = value.load(std::memory_order_relaxed);
                    else if (bothSet)
                    {
                        ++lost; // nothing pending, and no pass showed 2r
                        break;
                    }
                }
                acknowledged.store(round, std::memory_order_release);
            }
        });
    for (std::int64_t round = 1; round <= rounds; ++round)
    {
        value.store(2 * round - 1, std::memory_order_relaxed);
        event.Set();
        value.store(2 * round, std::memory_order_relaxed);
        event.Set();
        announced.store(round, std::memory_order_release);
        while (acknowledged.load(std::memory_order_acquire) != round)
            std::this_thread::yield();
    }
    consumer.join();
    return lost;
}
} // namespace

TEST_CASE("Stress: a Set that coalesces with a pending signal reaches the waiter that passes",
          "[stress][event]")
{
    // Found lost in 0.2% of rounds on x86-64 when AutoResetEvent_s's Set returned on seeing the
    // event set and its TryWait cleared the word with a plain store (store buffering).
    const std::int64_t rounds = Scaled(1000000);
    CHECK(CoalescedSetsLost<AutoResetEvent_s>(rounds) == 0);
    CHECK(CoalescedSetsLost<AutoResetEvent>(rounds) == 0);
}

namespace
{
// One AutoResetEvent_s, its waiter of `kind` making timed waits of 0-63 us that race the Sets'
// claims. Phase one: a setter and a resetter thread race the waiter; it may never pass more
// often than Set was called. Phase two, no Resets: one Set per round, made once the waiter
// announced the round; a wait that starts after that round's Set returned must pass (the Set
// was either counted or claimed a waiter that timed out first -- then it is counted), and no
// signal is left once every round passed.
void SpinFor(std::chrono::microseconds span)
{
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until)
        TC::detail::CpuRelax();
}

struct ResetRaceResult
{
    std::int64_t sets = 0, passes = 0, lost = 0, timeouts = 0;
    bool leftOver = false, suspended = false;
};

ResetRaceResult RaceSetsResetsAndTimeouts(WaiterKind kind, std::int64_t operations)
{
    AutoResetEvent_s event;
    ResetRaceResult result;
    std::atomic<bool> racing{true};
    std::atomic<std::int64_t> setsMade{0};
    std::atomic<std::int64_t> announced{0};
    std::atomic<std::int64_t> setDone{0};
    const auto timeout = [](std::int64_t i)
    { return TC::Duration(std::chrono::microseconds((i * 37) % 64)); };

    auto waiter = [&]
    {
        std::int64_t i = 0;
        while (racing.load(std::memory_order_acquire))
            (event.Wait(timeout(++i)) ? result.passes : result.timeouts) += 1;
        event.Reset(); // the setters are done: drop a signal left over from phase one
        for (std::int64_t round = 1; round <= operations; ++round)
        {
            announced.store(round, std::memory_order_release);
            for (;;)
            {
                const bool setBefore = setDone.load(std::memory_order_acquire) == round;
                if (event.Wait(timeout(++i)))
                {
                    ++result.passes;
                    // The round ends when its Set returned, so that the next one's starts after.
                    while (setDone.load(std::memory_order_acquire) < round)
                        TC::detail::CpuRelax();
                    break;
                }
                ++result.timeouts;
                if (setBefore)
                {
                    ++result.lost;
                    break;
                }
            }
        }
    };
    std::thread setter(
        [&]
        {
            for (std::int64_t i = 0; i < operations; ++i)
            {
                SpinFor(std::chrono::microseconds(i % 8));
                event.Set();
                setsMade.fetch_add(1, std::memory_order_relaxed);
            }
        });
    std::thread resetter(
        [&]
        {
            while (setsMade.load(std::memory_order_relaxed) < operations)
                event.Reset();
        });
    std::thread phaseTwo(
        [&]
        {
            setter.join();
            resetter.join();
            racing.store(false, std::memory_order_release);
            for (std::int64_t round = 1; round <= operations; ++round)
            {
                while (announced.load(std::memory_order_acquire) < round)
                    TC::detail::CpuRelax();
                SpinFor(std::chrono::microseconds((round * 13) % 48)); // against the timer
                event.Set();
                setDone.store(round, std::memory_order_release);
            }
        });
    if (kind == WaiterKind::Task)
    {
        TC::Scheduler scheduler(1u);
        scheduler.Start(waiter).Join();
    }
    else
    {
        std::thread(waiter).join();
    }
    phaseTwo.join();
    result.sets = 2 * operations;
    // One Set and one pass per round of phase two: nothing may be left over (a pass the Sets did
    // not make shows up here, or in passes > sets). The waiter's thread is joined: ours now.
    result.leftOver = event.TryWait();
    result.suspended = event.IsSuspended();
    return result;
}
} // namespace

TEST_CASE("Stress: AutoResetEvent_s under racing Sets, Resets and timed waits passes no more "
          "often than it was set and loses no Set",
          "[stress][event][timeout]")
{
    TC::EnableTimers();
    const std::int64_t operations = Scaled(200000);
    for (WaiterKind kind : {WaiterKind::Task, WaiterKind::Thread})
    {
        INFO("waiter: " << Name(kind));
        const ResetRaceResult result = RaceSetsResetsAndTimeouts(kind, operations);
        INFO("passes " << result.passes << ", timeouts " << result.timeouts);
        CHECK(result.passes <= result.sets);
        CHECK(result.passes >= operations); // every round of phase two passed once
        CHECK(result.lost == 0);
        CHECK_FALSE(result.leftOver);
        CHECK_FALSE(result.suspended);
        CHECK(result.timeouts > 0); // the timer raced the Sets at least sometimes
    }
}

TEST_CASE("Stress: ManualResetEvent_s and Latch created, waited and destroyed per round",
          "[stress][lifetime]")
{
    const std::int64_t rounds = Scaled(100000);
    TC::Scheduler scheduler(2u);
    auto waiter = scheduler.Start(
        [&]
        {
            for (std::int64_t i = 0; i < rounds; ++i)
            {
                ManualResetEvent_s event;
                Latch latch(2);
                auto helper = [&]
                {
                    latch.CountDown();
                    event.Set();
                };
                TC::Scheduler::Current()->Start(helper).Detach();
                latch.CountDown();
                event.Wait();
                latch.Wait(); // nothing touches the latch after its opening: this waiter may
                              // destroy it
            }
        });
    waiter.Join();
}

// Three CountDowns race on two workers while the waiter -- the converted main thread, or a task
// on a third scheduler -- waits and then deletes the latch at once: under ASan, any access of a
// CountDown after the exchange that opened the latch (or of a waiter after its Wait) is a
// heap-use-after-free.
TEST_CASE("Stress: a Latch deleted by its waiter the moment Wait returns", "[stress][lifetime]")
{
    const std::int64_t rounds = Scaled(50000);
    TC::Scheduler counters(2u);
    TC::Scheduler waiters(1u);
    // One round from the calling waiter; false if the latch it waited on was not settled (a
    // count left, or a waiter still suspended). Counted, since Catch2 asserts on the test's
    // thread only.
    auto round = [&]
    {
        auto* latch = new Latch(3);
        for (int i = 0; i < 3; ++i)
            counters.Start([latch] { latch->CountDown(); }).Detach();
        latch->Wait();
        const bool settled = latch->Count() == 0 && !latch->IsSuspended();
        delete latch;
        return settled;
    };
    std::int64_t unsettled = 0;
    for (std::int64_t i = 0; i < rounds / 2; ++i)
        unsettled += round() ? 0 : 1;
    waiters
        .Start(
            [&]
            {
                for (std::int64_t i = 0; i < rounds / 2; ++i)
                    unsettled += round() ? 0 : 1;
            })
        .Join();
    CHECK(unsettled == 0);
}

TEST_CASE("Stress: Mutex and Semaphore keep a plain counter exact", "[stress][mutex]")
{
    const std::int64_t perWorker = Scaled(250000);
    Mutex mutex;
    Semaphore sem(1);
    std::int64_t counterM = 0;
    std::int64_t counterS = 0;
    Waiters w;
    auto body = [&]
    {
        for (std::int64_t i = 0; i < perWorker; ++i)
        {
            {
                std::lock_guard guard(mutex);
                ++counterM;
            }
            sem.Acquire();
            ++counterS;
            sem.Release();
        }
    };
    for (int i = 0; i < 4; ++i)
        w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, body, [] { return std::suspend_never{}; });
    struct Coro
    {
        static Fire Run(Waiters& w, Mutex& mutex, Semaphore& sem, std::int64_t& m, std::int64_t& s,
                        std::int64_t n, std::atomic<bool>& done)
        {
            co_await w.GetScheduler().Schedule();
            for (std::int64_t i = 0; i < n; ++i)
            {
                co_await mutex.LockAsync();
                ++m;
                mutex.Unlock();
                co_await sem.AcquireAsync();
                ++s;
                sem.Release();
            }
            done = true;
        }
    };
    std::atomic<bool> coroDone{false};
    Coro::Run(w, mutex, sem, counterM, counterS, perWorker, coroDone);
    CHECK(w.WaitFinished(5, 120s));
    CHECK(Eventually([&] { return coroDone.load(); }, 60s));
    std::lock_guard guard(mutex);
    CHECK(counterM == 6 * perWorker);
    CHECK(counterS == 6 * perWorker);
}

namespace
{
// The coroutine acquirer: untimed and timed awaits (polling has no coroutine form).
Fire AcquireAsCoroutine(Waiters& w, PermitTally<Semaphore>& tally)
{
    co_await w.GetScheduler().Schedule();
    std::int64_t local = 0;
    for (std::uint64_t round = 0;; ++round)
    {
        bool got = true;
        if (tally.Untimed(round))
            co_await tally.gate.AcquireAsync();
        else
            got = co_await tally.gate.AcquireAsync(std::chrono::microseconds(round % 16));
        if (!tally.Count(got, local))
            break;
    }
    tally.Finish(local);
}
} // namespace

// Three tasks, a thread and a coroutine acquire from a counting semaphore (untimed, timed with
// timeouts of 0-15 us, polling) while two threads release one or three permits at a time: no
// permit is made or lost (acquired + left == initial + released) and every acquirer finishes.
TEST_CASE("Stress: a counting Semaphore under racing Releases and timed acquires conserves permits",
          "[stress][semaphore][timeout]")
{
    TC::EnableTimers();
    constexpr std::int64_t kInitial = 2;
    Semaphore sem(kInitial);
    RunPermitConservationStress(
        sem, kInitial, Scaled(100000),
        [](Semaphore& s, std::uint64_t round, bool untimed)
        {
            if (untimed)
            {
                s.Acquire();
                return true;
            }
            if (round % 4 == 1)
                return s.TryAcquire();
            return s.Acquire(std::chrono::microseconds(round % 16));
        },
        [](Waiters& w, PermitTally<Semaphore>& tally) { AcquireAsCoroutine(w, tally); });
}

// The waiter may destroy the semaphore as soon as its Acquire returns, whichever way the permit
// reached it -- handed over by a Release, taken in its re-check, or taken outright -- while that
// Release may still be running (ASan checks the accesses).
TEST_CASE("Stress: a Semaphore destroyed by its waiter as soon as Acquire returns",
          "[stress][semaphore]")
{
    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler scheduler(2u);
    std::int64_t done = 0;
    bool allAcquired = true; // written by the one waiter of each round, read after its Join
    for (std::int64_t i = 1; i <= rounds; ++i)
    {
        auto* sem = new Semaphore(0);
        AutoResetEvent_s finished;
        auto waiter = scheduler.Start(
            [&, sem, timed = i % 2 == 0]
            {
                if (timed)
                    allAcquired &= sem->Acquire(std::chrono::seconds(60));
                else
                    sem->Acquire();
                delete sem;
                finished.Set();
            });
        if (i % 3 == 0)
            std::this_thread::yield(); // now and then the waiter is queued first
        sem->Release();                // the last access of this thread to the semaphore
        finished.Wait();
        waiter.Join();
        ++done;
    }
    CHECK(allAcquired);
    CHECK(done == rounds);
}

TEST_CASE("Stress: ConditionVariable producer/consumer", "[stress][cv]")
{
    const std::int64_t items = Scaled(300000);
    Mutex mutex;
    ConditionVariable notEmpty;
    ConditionVariable notFull;
    std::vector<std::int64_t> queue;
    bool finished = false;
    std::int64_t consumed = 0;
    std::int64_t sum = 0;
    Waiters w;
    auto producer = [&](std::int64_t from, std::int64_t to)
    {
        for (std::int64_t i = from; i < to; ++i)
        {
            std::unique_lock lock(mutex);
            notFull.Wait(lock, [&] { return queue.size() < 64; });
            queue.push_back(i);
            notEmpty.NotifyOne();
        }
    };
    auto consumer = [&]
    {
        std::unique_lock lock(mutex);
        for (;;)
        {
            notEmpty.Wait(lock, [&] { return !queue.empty() || finished; });
            if (queue.empty())
                return;
            sum += queue.back();
            queue.pop_back();
            ++consumed;
            notFull.NotifyOne();
        }
    };
    w.Start(
        WaiterKind::Task, [&] { producer(0, items / 2); }, [] { return std::suspend_never{}; });
    w.Start(
        WaiterKind::Thread, [&] { producer(items / 2, items); },
        [] { return std::suspend_never{}; });
    for (int i = 0; i < 2; ++i)
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, consumer, [] { return std::suspend_never{}; });
    CHECK(w.WaitFinished(2, 120s)); // the producers
    {
        std::lock_guard guard(mutex);
        finished = true;
    }
    notEmpty.NotifyAll();
    CHECK(w.WaitFinished(5, 60s));
    CHECK(consumed == items);
    CHECK(sum == items * (items - 1) / 2);
}

TEST_CASE("Stress: Barrier phases and WaitGroup rounds", "[stress][barrier]")
{
    const std::int64_t phases = Scaled(40000);
    Barrier barrier(3);
    std::atomic<std::int64_t> serial{0};
    Waiters w;
    auto body = [&]
    {
        for (std::int64_t i = 0; i < phases; ++i)
            if (barrier.ArriveAndWait())
                serial.fetch_add(1);
    };
    w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, body, [] { return std::suspend_never{}; });
    CHECK(w.WaitFinished(3, 120s));
    CHECK(serial == phases);

    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler& scheduler = w.GetScheduler();
    std::atomic<std::int64_t> work{0};
    for (std::int64_t r = 0; r < rounds; ++r)
    {
        WaitGroup group;
        group.Add(3);
        for (int i = 0; i < 3; ++i)
            scheduler
                .Start(
                    [&]
                    {
                        work.fetch_add(1);
                        group.Done();
                    })
                .Detach();
        group.Wait(); // the converted main thread made it: resumed last, then destroys it
    }
    CHECK(work == 3 * rounds);
}

TEST_CASE("Stress: Mailbox<T> request/reply", "[stress][mailbox]")
{
    const std::int64_t requests = Scaled(200000);
    Mailbox<std::int64_t> in;
    Mailbox<std::int64_t> out;
    TC::Scheduler scheduler(2u);
    auto service = scheduler.Start(
        [&]
        {
            for (std::int64_t r; (r = in.Take()) > 0;)
                out.Put(r * 2);
        });
    std::int64_t sum = 0;
    std::thread client(
        [&]
        {
            for (std::int64_t i = 1; i <= requests; ++i)
            {
                in.Put(i);
                sum += out.Take();
            }
            in.Put(-1);
        });
    client.join();
    service.Join();
    CHECK(sum == requests * (requests + 1));
}

// A coroutine taker cannot loop over a spurious resume the way Take does, so a Put must never
// reach the taker's next wait: here the taker often takes the value through its re-check or in
// await_ready while the Put that stored it is still on its way to the waiter slot.
TEST_CASE("Stress: Mailbox<T> request/reply, a coroutine taker", "[stress][mailbox]")
{
    const std::int64_t requests = Scaled(200000);
    Mailbox<std::int64_t> in;
    Mailbox<std::int64_t> out;
    TC::Scheduler scheduler(2u);
    std::atomic<bool> served{false};
    struct Service
    {
        static Fire Run(TC::Scheduler& scheduler, Mailbox<std::int64_t>& in,
                        Mailbox<std::int64_t>& out, std::atomic<bool>& served)
        {
            co_await scheduler.Schedule();
            for (std::int64_t r; (r = co_await in.TakeAsync()) > 0;)
                out.Put(r * 2);
            served = true;
        }
    };
    Service::Run(scheduler, in, out, served);
    std::int64_t sum = 0;
    for (std::int64_t i = 1; i <= requests; ++i)
    {
        in.Put(i);
        sum += out.Take();
    }
    in.Put(-1);
    CHECK(Eventually([&] { return served.load(); }));
    CHECK(sum == requests * (requests + 1));
}

// The taker may destroy the mailbox as soon as Take returns, also when it found the value
// without suspending while the Put that stored it was still on its way to Resume() (ASan).
TEST_CASE("Stress: a Mailbox<T> destroyed by its taker as soon as Take returns", "[stress][mailbox]")
{
    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler scheduler(2u);
    std::int64_t sum = 0;
    for (std::int64_t i = 1; i <= rounds; ++i)
    {
        auto* box = new Mailbox<std::int64_t>;
        AutoResetEvent_s taken;
        std::int64_t value = 0;
        auto taker = scheduler.Start(
            [&, box, poll = i % 2 == 0]
            {
                if (poll) // takes the value the moment Put has stored it, before Put resumes
                {
                    std::optional<std::int64_t> got;
                    while (!(got = box->TryTake()))
                        std::this_thread::yield();
                    value = *got;
                }
                else
                    value = box->Take();
                delete box;
                taken.Set();
            });
        box->Put(i); // the last access of this thread to the box
        taken.Wait();
        taker.Join();
        sum += value;
    }
    CHECK(sum == rounds * (rounds + 1) / 2);
}

namespace
{
// What the taker of MailboxRacingPuts has seen: each putter's last sequence number, and counts.
struct MailboxTakes
{
    static constexpr int kPutters = 2;
    std::int64_t last[kPutters] = {0, 0};
    std::int64_t taken = 0;
    std::int64_t timedOut = 0;
    bool ordered = true;
    std::atomic<std::int64_t> progress{0}; // the putters pace themselves on it
    std::atomic<bool> finished{false};

    // Records one take; false for the sentinel.
    bool Record(std::int64_t value)
    {
        if (value < 0)
            return false;
        const auto putter = static_cast<int>(value >> 40);
        const std::int64_t sequence = value & ((std::int64_t{1} << 40) - 1);
        ordered &= sequence > last[putter];
        last[putter] = sequence;
        progress.store(++taken, std::memory_order_relaxed);
        return true;
    }
};

// The taker of MailboxRacingPuts as a coroutine: the awaiter forms of the same three takes.
Fire TakeAsCoroutine(TC::Scheduler& scheduler, Mailbox<std::int64_t>& box, MailboxTakes& takes)
{
    co_await scheduler.Schedule();
    for (std::uint64_t round = 0;; ++round)
    {
        std::optional<std::int64_t> value;
        if (round % 3 == 0)
            value = co_await box.TakeAsync();
        else if (round % 3 == 1)
            value = co_await box.TakeAsync(std::chrono::microseconds(round % 16));
        else if (!(value = box.TryTake()))
            co_await scheduler.Schedule();
        if (!value)
            takes.timedOut += round % 3 == 1;
        else if (!takes.Record(*value))
            break;
    }
    takes.finished = true;
}

// Two threads Put while one taker takes, mixing untimed, timed (timeouts of 0-15 us, so that
// the timer's claim races a Put's) and polling takes: every value is taken at most once and in
// each putter's order, and every Put's value is either taken or reported replaced by a later Put.
void MailboxRacingPuts(bool coroutineTaker)
{
    TC::EnableTimers();
    const std::int64_t perPutter = Scaled(200000);
    Mailbox<std::int64_t> box;
    MailboxTakes takes;
    TC::Scheduler scheduler(2u);
    std::optional<TC::JoinHandle> taker;
    if (coroutineTaker)
        TakeAsCoroutine(scheduler, box, takes);
    else
        taker = scheduler.Start(
            [&]
            {
                for (std::uint64_t round = 0;; ++round)
                {
                    std::optional<std::int64_t> value;
                    if (round % 3 == 0)
                        value = box.Take();
                    else if (round % 3 == 1)
                        value = box.Take(std::chrono::microseconds(round % 16));
                    else if (!(value = box.TryTake()))
                        TC::YieldTask();
                    if (!value)
                        takes.timedOut += round % 3 == 1;
                    else if (!takes.Record(*value))
                        return;
                }
            });
    std::atomic<std::int64_t> replaced{0};
    std::vector<std::thread> putters;
    for (int p = 0; p < MailboxTakes::kPutters; ++p)
        putters.emplace_back(
            [&, p]
            {
                std::int64_t local = 0;
                for (std::int64_t i = 1; i <= perPutter; ++i)
                {
                    const std::int64_t seen = takes.progress.load(std::memory_order_relaxed);
                    local += box.Put((std::int64_t{p} << 40) | i);
                    // Mostly wait (a while) for the taker, so that Puts meet a suspended taker,
                    // a timing-out one and a full slot, not only each other.
                    for (int spin = 0; spin < 4000 && i % 8 != 0; ++spin)
                        if (takes.progress.load(std::memory_order_relaxed) != seen)
                            break;
                        else
                            TC::detail::CpuRelax();
                }
                replaced += local;
            });
    for (auto& putter : putters)
        putter.join();
    const bool sentinelReplaced = box.Put(-1); // the taker stops at it
    if (taker)
        taker->Join();
    else
        REQUIRE(Eventually([&] { return takes.finished.load(); }));
    INFO("taken " << takes.taken << ", replaced " << replaced.load() << ", timed out "
                  << takes.timedOut);
    CHECK(takes.ordered);
    CHECK(takes.taken + replaced.load() + sentinelReplaced == MailboxTakes::kPutters * perPutter);
    CHECK(takes.taken > 0);
    CHECK_FALSE(box.IsSuspended());
}
} // namespace

TEST_CASE("Stress: Mailbox<T> with racing Puts and timed takes loses and repeats nothing",
          "[stress][mailbox][timeout]")
{
    SECTION("a task taker")
    {
        MailboxRacingPuts(false);
    }
    SECTION("a coroutine taker")
    {
        MailboxRacingPuts(true);
    }
}

namespace
{
// Not trivially copyable (a user-provided copy): constructed into and moved out of its slot.
struct SlotValue
{
    SlotValue(std::int64_t v) : value(v) {}
    SlotValue(const SlotValue& other) : value(other.value) {}
    SlotValue& operator=(const SlotValue& other) = default;
    operator std::int64_t() const { return value; }
    std::int64_t value;
};

template <class Value>
void ChannelMpmcStress()
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{16}})
    {
        INFO("capacity " << capacity);
        const std::int64_t perProducer = Scaled(300000);
        Channel<Value> channel(capacity);
        std::atomic<std::int64_t> sum{0};
        std::atomic<std::int64_t> count{0};
        Waiters w;
        auto producer = [&]
        {
            for (std::int64_t i = 1; i <= perProducer; ++i)
                channel.Send(i);
        };
        auto consumer = [&]
        {
            std::int64_t local = 0, n = 0;
            while (auto v = channel.Receive())
            {
                local += static_cast<std::int64_t>(*v);
                ++n;
            }
            sum += local;
            count += n;
        };
        w.Start(WaiterKind::Task, producer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Thread, producer, [] { return std::suspend_never{}; });
        CHECK(Eventually([] { return true; }));
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Thread, consumer, [] { return std::suspend_never{}; });
        struct Coro
        {
            static Fire Run(Waiters& w, Channel<Value>& ch, std::atomic<std::int64_t>& sum,
                            std::atomic<std::int64_t>& count, std::atomic<bool>& done)
            {
                co_await w.GetScheduler().Schedule();
                while (auto v = co_await ch.ReceiveAsync())
                {
                    sum += static_cast<std::int64_t>(*v);
                    count += 1;
                }
                done = true;
            }
        };
        std::atomic<bool> coroDone{false};
        Coro::Run(w, channel, sum, count, coroDone);
        CHECK(w.WaitFinished(2, 120s)); // the producers
        channel.Close();
        CHECK(w.WaitFinished(5, 60s));
        CHECK(Eventually([&] { return coroDone.load(); }, 60s));
        CHECK(count == 2 * perProducer);
        CHECK(sum == perProducer * (perProducer + 1));
    }
}
} // namespace

TEST_CASE("Stress: Channel MPMC, bounded and unbounded", "[stress][channel]")
{
    SECTION("trivially copyable values")
    {
        ChannelMpmcStress<std::int64_t>();
    }
    SECTION("values with a user-provided copy")
    {
        ChannelMpmcStress<SlotValue>();
    }
}

TEST_CASE("Stress: a value sent before Close is received, never dropped as closed and drained",
          "[stress][channel]")
{
    // Each round a fresh channel: one thread Sends then Closes it while this one Receives, each
    // after a short random spin so that the three land in every order. Receive must return the
    // value -- it was sent before the Close -- yet 0.01% of rounds said "closed and drained" while
    // the receiver looked at the count before the Send and at the flag after the Close (the count
    // is now read again once the flag says closed).
    const std::int64_t rounds = Scaled(2000000);
    std::atomic<Channel<int>*> current{nullptr};
    std::atomic<std::int64_t> started{0};
    std::atomic<std::int64_t> finished{0};
    auto spin = [](std::uint32_t& seed)
    {
        seed = seed * 1103515245u + 12345u;
        for (std::uint32_t i = (seed >> 16) % 40; i > 0; --i)
            TC::detail::CpuRelax();
    };
    std::thread sender(
        [&]
        {
            std::uint32_t seed = 1;
            for (std::int64_t round = 1; round <= rounds; ++round)
            {
                while (started.load(std::memory_order_acquire) != round)
                {
                }
                Channel<int>* channel = current.load(std::memory_order_relaxed);
                spin(seed);
                channel->Send(42);
                channel->Close();
                finished.store(round, std::memory_order_release);
            }
        });
    std::int64_t dropped = 0;
    std::int64_t received = 0;
    std::uint32_t seed = 7;
    for (std::int64_t round = 1; round <= rounds; ++round)
    {
        Channel<int> channel;
        current.store(&channel, std::memory_order_relaxed);
        started.store(round, std::memory_order_release);
        spin(seed);
        const std::optional<int> value = channel.Receive();
        while (finished.load(std::memory_order_acquire) != round)
        {
        }
        int left = 0;
        if (value)
            ++received;
        else if (channel.TryReceive(left) == ChannelStatus::Ok)
            ++dropped; // "closed and drained" with the value still inside
    }
    sender.join();
    CHECK(dropped == 0);
    CHECK(received == rounds);
}
