// Semaphore, Mutex and ConditionVariable: every kind of waiter, timeouts, FIFO hand-off and the
// condition variable's wake-up rules.

#include "SyncTestSupport.h"
#include "support/SteadyClock.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

TEST_CASE("Semaphore hands permits to waiters of every kind", "[semaphore]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Semaphore sem(1);
        CHECK(sem.TryAcquire());
        CHECK_FALSE(sem.TryAcquire());
        Waiters w;
        for (int i = 0; i < 3; ++i)
            w.Start(
                kind, [&] { sem.Acquire(); }, [&] { return sem.AcquireAsync(); });
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        sem.Release(2);
        CHECK(w.WaitFinished(2));
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 2);
        sem.Release(2);
        CHECK(w.WaitFinished(3));
        CHECK(Eventually([&] { return sem.Available() == 1; }));
    }
}

TEST_CASE("Semaphore timed acquire times out from every kind of waiter", "[semaphore][timeout]")
{
    TC::EnableTimers();
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Semaphore sem(0);
        std::atomic<int> results{0}; // +1 per timeout, +100 per acquisition
        auto record = [&results](bool ok) { results += ok ? 100 : 1; };
        {
            Waiters w;
            w.Start(
                kind, [&] { record(sem.Acquire(5ms)); },
                [&] {
                    return Then<Semaphore::AcquireForAwaiter, decltype(record)>{
                        sem.AcquireAsync(5ms), record};
                });
            CHECK(w.WaitFinished(1));
            CHECK(results == 1);
            sem.Release();
            w.Start(
                kind, [&] { record(sem.Acquire(5s)); },
                [&] {
                    return Then<Semaphore::AcquireForAwaiter, decltype(record)>{
                        sem.AcquireAsync(5s), record};
                });
            CHECK(w.WaitFinished(2));
        }
        CHECK(results == 101);
        CHECK(sem.Available() == 0); // the timed-out waiter took nothing
    }
}

namespace
{
// Started on a thread with no executor, so the Release that serves it resumes it inline: while
// it spins here, that Release is still running. Records whether `acquired` was set meanwhile.
Fire HoldReleaseInFlight(Semaphore& sem, std::atomic<bool>& inside, std::atomic<bool>& acquired,
                         std::atomic<bool>& acquiredWhileInside)
{
    co_await sem.AcquireAsync();
    inside = true; // nothing of the semaphore is touched from here on
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until && !acquired.load())
        std::this_thread::yield();
    acquiredWhileInside = acquired.load();
}
} // namespace

TEST_CASE("Semaphore: a waiter may destroy it while the Release that gave its permit still runs",
          "[semaphore]")
{
    // Release(2) resumes the coroutine inline and is held there; this thread takes the second
    // permit meanwhile and destroys the semaphore, as Semaphore.h allows. The Release touches
    // nothing of it after the RMW that made the permits available (ASan checks), so the Acquire
    // need not wait for it: it returns while the Release is still inside the coroutine. (A Release
    // that read the waiter count after that RMW would make every Acquire wait out the Releases in
    // flight.)
    auto* sem = new Semaphore(0);
    std::atomic<bool> inside{false};
    std::atomic<bool> acquired{false};
    std::atomic<bool> acquiredWhileInside{false};
    HoldReleaseInFlight(*sem, inside, acquired, acquiredWhileInside);
    std::thread releaser([&] { sem->Release(2); });
    CHECK(Eventually([&] { return inside.load(); }));
    sem->Acquire();
    CHECK(sem->Available() == 0);
    delete sem;
    acquired = true;
    releaser.join();
    CHECK(acquiredWhileInside);
}

namespace
{
Fire TakeOnePermit(Semaphore& sem, std::atomic<int>& done)
{
    co_await sem.AcquireAsync();
    done.fetch_add(1);
}
} // namespace

TEST_CASE("Semaphore: two Releases at once, each resuming an inline coroutine, do not wait for "
          "each other",
          "[semaphore]")
{
    // Two coroutines with no executor wait; two threads release at the same moment, so each
    // resumes one inline, inside its Release. Each coroutine's drain used to wait for the other
    // thread's Release, which could not end until that thread's coroutine returned: a deadlock.
    // A hang cannot be undone, so the watchdog ends the process with a message.
    std::atomic<std::int64_t> round{0};
    std::atomic<bool> finished{false};
    std::thread watchdog(
        [&]
        {
            std::int64_t last = -1;
            while (!finished.load())
            {
                for (int i = 0; i < 100 && !finished.load(); ++i)
                    std::this_thread::sleep_for(50ms);
                const std::int64_t now = round.load();
                if (!finished.load() && now == last)
                {
                    std::fprintf(stderr,
                                 "two Releases resuming inline coroutines deadlocked "
                                 "(round %lld)\n",
                                 static_cast<long long>(now));
                    std::_Exit(3);
                }
                last = now;
            }
        });
    const std::int64_t rounds = 5000; // not scaled: the deadlock needs both threads in the window
    bool allDone = true;
    for (std::int64_t r = 0; r < rounds; ++r)
    {
        Semaphore sem(0);
        std::atomic<int> done{0};
        TakeOnePermit(sem, done);
        TakeOnePermit(sem, done);
        std::atomic<int> ready{0};
        auto release = [&]
        {
            ready.fetch_add(1);
            while (ready.load() < 2)
            {
            }
            sem.Release();
        };
        std::thread a(release);
        std::thread b(release);
        a.join();
        b.join();
        allDone = allDone && done.load() == 2;
        round = r + 1;
    }
    finished = true;
    watchdog.join();
    CHECK(allDone);
}

TEST_CASE("Mutex excludes waiters of every kind", "[mutex]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Mutex mutex;
        int inside = 0;
        bool overlap = false;
        mutex.Lock();
        Waiters w;
        for (int i = 0; i < 3; ++i)
            w.Start(
                kind,
                [&]
                {
                    std::lock_guard guard(mutex);
                    overlap = overlap || ++inside != 1;
                    std::this_thread::sleep_for(1ms);
                    --inside;
                },
                [&]
                {
                    auto record = [&]
                    {
                        overlap = overlap || ++inside != 1;
                        --inside;
                        mutex.Unlock();
                    };
                    return Then<Mutex::LockAwaiter, decltype(record)>{mutex.LockAsync(), record};
                });
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        CHECK_FALSE(mutex.TryLock());
        mutex.Unlock();
        CHECK(w.WaitFinished(3));
        CHECK_FALSE(overlap);
        CHECK(mutex.TryLock());
        mutex.unlock();
    }
}

TEST_CASE("Mutex hands over in arrival order and a newcomer cannot barge", "[mutex][fairness]")
{
    TC::Scheduler host(0u); // tasks run here in the order they are queued
    Mutex mutex;
    std::vector<int> order;
    mutex.lock(); // the main thread owns it
    std::vector<TC::JoinHandle> tasks;
    for (int i = 1; i <= 5; ++i)
        tasks.push_back(host.Start(
            [&, i]
            {
                mutex.lock();
                order.push_back(i);
                mutex.unlock();
            }));
    host.RunUntilIdle(); // all five queue up, in order
    REQUIRE(order.empty());
    mutex.unlock();                // hands the mutex to task 1 before it even runs
    CHECK_FALSE(mutex.try_lock()); // so the main thread cannot barge in
    CHECK(mutex.IsLocked());
    host.RunUntilIdle();
    CHECK(order == std::vector<int>{1, 2, 3, 4, 5});
    CHECK(mutex.try_lock());
    mutex.unlock();
    for (auto& t : tasks)
        t.Join();
}

TEST_CASE("Mutex: a newcomer never takes it from a queued waiter", "[mutex][fairness]")
{
    TC::Scheduler host(0u); // the queued waiter runs only when this thread pumps
    Mutex mutex;
    std::atomic<int> taken{0}; // acquisitions by newcomers
    int takenBeforeFirst = -1;
    mutex.lock(); // the main thread owns it
    auto first = host.Start(
        [&]
        {
            mutex.lock();
            takenBeforeFirst = taken.load();
            mutex.unlock();
        });
    host.RunUntilIdle(); // it finds the mutex locked and queues
    // Pollers: try_lock in a loop, the newcomer's own test and CAS, run across the hand-off.
    std::atomic<bool> stop{false};
    std::vector<std::thread> pollers;
    for (int i = 0; i < 2; ++i)
        pollers.emplace_back(
            [&]
            {
                while (!stop.load())
                    if (mutex.try_lock())
                    {
                        taken.fetch_add(1);
                        mutex.unlock();
                    }
            });
    std::this_thread::sleep_for(5ms);
    mutex.unlock(); // hands it to `first`, which stays queued-then-owning until pumped
    {
        // Newcomers of every kind find it locked and queue behind `first`. None may get it
        // before `first` ran.
        Waiters late;
        for (WaiterKind kind : kAllKinds)
            late.Start(
                kind,
                [&]
                {
                    std::lock_guard guard(mutex);
                    taken.fetch_add(1);
                },
                [&]
                {
                    auto record = [&]
                    {
                        taken.fetch_add(1);
                        mutex.Unlock();
                    };
                    return Then<Mutex::LockAwaiter, decltype(record)>{mutex.LockAsync(), record};
                });
        std::this_thread::sleep_for(20ms);
        CHECK(taken.load() == 0);
        CHECK(mutex.IsLocked());
        host.RunUntilIdle(); // `first` runs at last, already owning it, and passes it on
        CHECK(takenBeforeFirst == 0);
        CHECK(late.WaitFinished(3));
    }
    stop = true;
    for (auto& poller : pollers)
        poller.join();
    first.Join();
    CHECK(taken.load() >= 3);
    CHECK_FALSE(mutex.IsLocked());
}

TEST_CASE("Mutex::TryLockFor times out and leaves the queue intact", "[mutex][timeout]")
{
    TC::EnableTimers();
    Mutex mutex;
    mutex.lock();
    TC::Scheduler scheduler(2u);
    std::atomic<int> got{0};
    auto late = scheduler.Start([&] { got += mutex.TryLockFor(5ms) ? 100 : 1; });
    auto patient = scheduler.Start(
        [&]
        {
            mutex.lock();
            got += 10;
            mutex.unlock();
        });
    std::thread thread([&] { got += mutex.TryLockFor(5ms) ? 100 : 1; });
    late.Join();
    thread.join();
    CHECK(got == 2);
    mutex.unlock();
    patient.Join();
    CHECK(got == 12);
    CHECK_FALSE(mutex.IsLocked());
}

TEST_CASE("ConditionVariable wakes waiters of every kind, owning the mutex", "[cv]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Mutex mutex;
        ConditionVariable cv;
        int ready = 0;
        bool owned = true;
        Waiters w;
        for (int i = 0; i < 3; ++i)
            w.Start(
                kind,
                [&]
                {
                    std::unique_lock lock(mutex);
                    cv.Wait(lock, [&] { return ready > 0; });
                    owned = owned && mutex.IsLocked();
                },
                [&]
                {
                    struct Awaiter
                    {
                        Mutex& mutex;
                        ConditionVariable& cv;
                        int& ready;
                        bool& owned;
                        bool await_ready() { return false; }
                        void await_suspend(std::coroutine_handle<> h) { Run(*this, h); }
                        void await_resume() {}
                        static Fire Run(Awaiter& self, std::coroutine_handle<> h)
                        {
                            co_await self.mutex.LockAsync();
                            while (self.ready == 0)
                                co_await self.cv.WaitAsync(self.mutex);
                            self.owned = self.owned && self.mutex.IsLocked();
                            self.mutex.Unlock();
                            h.resume();
                        }
                    };
                    return Awaiter{mutex, cv, ready, owned};
                });
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        {
            std::lock_guard guard(mutex);
            ready = 1;
        }
        cv.NotifyAll();
        CHECK(w.WaitFinished(3));
        CHECK(owned);
    }
}

TEST_CASE("ConditionVariable: no spurious wake-ups, NotifyOne is FIFO, stolen wake-ups "
          "re-wait",
          "[cv][spurious]")
{
    TC::Scheduler host(0u);
    Mutex mutex;
    ConditionVariable cv;
    std::vector<int> woke;
    int items = 0;
    std::vector<TC::JoinHandle> tasks;
    for (int i = 1; i <= 3; ++i)
        tasks.push_back(host.Start(
            [&, i]
            {
                std::unique_lock lock(mutex);
                cv.Wait(lock); // plain Wait: returns only when notified
                woke.push_back(i);
            }));
    host.RunUntilIdle();
    host.RunUntilIdle();
    CHECK(woke.empty()); // nothing returns without a notification

    cv.NotifyOne();
    host.RunUntilIdle();
    CHECK(woke == std::vector<int>{1}); // the oldest
    cv.NotifyAll();
    host.RunUntilIdle();
    CHECK(woke == std::vector<int>{1, 2, 3});

    // A predicate waiter whose notification is "stolen" before it owns the mutex re-waits.
    bool consumed = false;
    auto consumer = host.Start(
        [&]
        {
            std::unique_lock lock(mutex);
            cv.Wait(lock, [&] { return items > 0; });
            --items;
            consumed = true;
        });
    host.RunUntilIdle();
    {
        std::unique_lock lock(mutex);
        items = 1;
        cv.NotifyOne(); // the consumer queues on the mutex we hold
        items = 0;      // and we take the item before it gets the mutex
    }
    host.RunUntilIdle();
    CHECK_FALSE(consumed);
    {
        std::unique_lock lock(mutex);
        items = 1;
    }
    cv.NotifyOne();
    host.RunUntilIdle();
    CHECK(consumed);
    CHECK(items == 0);
    consumer.Join();
    for (auto& t : tasks)
        t.Join();
}

TEST_CASE("ConditionVariable::WaitFor times out owning the mutex", "[cv][timeout]")
{
    TC::EnableTimers();
    Mutex mutex;
    ConditionVariable cv;
    for (WaiterKind kind : {WaiterKind::Task, WaiterKind::Thread})
    {
        INFO("waiter: " << Name(kind));
        std::atomic<int> result{0};
        Waiters w;
        w.Start(
            kind,
            [&]
            {
                std::unique_lock lock(mutex);
                const bool timedOut = cv.WaitFor(lock, 5ms) == CvStatus::TimedOut;
                const bool predTimedOut = !cv.WaitFor(lock, 5ms, [] { return false; });
                result = (timedOut && predTimedOut && mutex.IsLocked()) ? 1 : 2;
            },
            [] { return std::suspend_never{}; });
        CHECK(w.WaitFinished(1));
        CHECK(result == 1);
        CHECK_FALSE(mutex.IsLocked());
    }
    // Notified before the timeout: Notified. The mutex is ours only once the waiter is queued
    // on the condition variable, so the notification cannot come before its wait (as one after
    // a fixed sleep could, on a worker slow to start) and be lost.
    TC::Scheduler scheduler(1u);
    std::atomic<bool> locked{false};
    std::atomic<bool> notified{false};
    auto waiter = scheduler.Start(
        [&]
        {
            std::unique_lock lock(mutex);
            locked = true;
            notified = cv.WaitFor(lock, 10s) == CvStatus::Notified;
        });
    while (!locked)
        std::this_thread::yield();
    {
        std::lock_guard guard(mutex);
        cv.NotifyOne();
    }
    waiter.Join();
    CHECK(notified);
}

TEST_CASE("ConditionVariable::WaitFor with a predicate, notified over and over, waits its whole "
          "timeout",
          "[cv][timeout]")
{
    // Every notification ends one wait with the predicate still false, so the time budget is
    // consulted again and again: its start must never be later than the call, nor its reads
    // make the total shorter than the timeout.
    TC::EnableTimers();
    Mutex mutex;
    ConditionVariable cv;
    std::atomic<bool> stop{false};
    std::thread notifier(
        [&]
        {
            while (!stop.load())
            {
                cv.NotifyAll();
                std::this_thread::sleep_for(200us);
            }
        });
    for (WaiterKind kind : {WaiterKind::Task, WaiterKind::Thread})
    {
        INFO("waiter: " << Name(kind));
        std::atomic<int> early{0};
        std::atomic<int> passed{0};
        Waiters w;
        w.Start(
            kind,
            [&]
            {
                for (int round = 0; round < 20; ++round)
                {
                    const auto timeout = std::chrono::microseconds(300 + 700 * (round % 5));
                    std::unique_lock lock(mutex);
                    const auto start = std::chrono::steady_clock::now();
                    const bool met = cv.WaitFor(lock, timeout, [] { return false; });
                    early += std::chrono::steady_clock::now() - start < timeout;
                    passed += met;
                }
            },
            [] { return std::suspend_never{}; });
        CHECK(w.WaitFinished(1));
        CHECK(early == 0);
        CHECK(passed == 0);
    }
    stop = true;
    notifier.join();
}

TEST_CASE("ConditionVariable may be destroyed once its waiters are notified, past their timeout",
          "[cv][timeout]")
{
    // Before the fix, a notified waiter's deadline still ran OnTimeout, which took the condition
    // variable's lock to find out that it had been notified: with the waiter queued on the mutex
    // past its deadline and the condition variable already destroyed (allowed: nobody waits on
    // it), the timer thread wrote into freed memory (ASan: heap-use-after-free).
    TC::EnableTimers();
    constexpr auto kTimeout = 20ms;
    for (WaiterKind kind : {WaiterKind::Task, WaiterKind::Thread})
    {
        INFO("waiter: " << Name(kind));
        // A round counts only if the notification came before the deadline could pass; on a
        // loaded machine this thread may reach the mutex later than that, and then the timeout
        // may own the waiter, which keeps the condition variable: that round is run again.
        bool notifiedInTime = false;
        for (int round = 0; round < 50 && !notifiedInTime; ++round)
        {
            Mutex mutex;
            auto cv = std::make_unique<ConditionVariable>();
            std::atomic<std::int64_t> startedNs{0};
            std::atomic<int> result{0};
            Waiters w;
            w.Start(
                kind,
                [&]
                {
                    std::unique_lock lock(mutex);
                    startedNs = TCSupport::NowNs(); // before the wait's own clock read
                    result = cv->WaitFor(lock, kTimeout) == CvStatus::Notified ? 1 : 2;
                },
                [] { return std::suspend_never{}; });
            while (startedNs.load() == 0)
                std::this_thread::yield();
            {
                std::unique_lock lock(mutex); // ours once the waiter is queued on the cv
                cv->NotifyAll();              // the waiter moves to the mutex's queue
                // The timer fires no earlier than startedNs + kTimeout, less the deadline
                // clock's lead over the steady clock (25 us, DeadlineClock.h): a NotifyAll that
                // returned a millisecond before that claimed the waiter first.
                const std::int64_t earliestFireNs =
                    startedNs.load() + std::chrono::nanoseconds(kTimeout - 1ms).count();
                notifiedInTime = TCSupport::NowNs() < earliestFireNs;
                if (notifiedInTime)
                {
                    cv.reset();
                    std::this_thread::sleep_for(kTimeout + 10ms); // its deadline passes meanwhile
                }
            }
            CHECK(w.WaitFinished(1));
            if (notifiedInTime)
                CHECK(result == 1);
            else
                CHECK(result != 0);
        }
        CHECK(notifiedInTime);
    }
}

TEST_CASE("ConditionVariable::WaitFor with a predicate and a huge finite timeout waits",
          "[cv][timeout]")
{
    // Before the fix the predicate form computed now + timeout, a signed overflow for a timeout
    // near Duration::Infinite() (undefined behaviour: UBSan stops here in the asan preset).
    TC::EnableTimers();
    Mutex mutex;
    ConditionVariable cv;
    bool ready = false;
    std::thread setter(
        [&]
        {
            std::this_thread::sleep_for(20ms);
            {
                std::lock_guard guard(mutex);
                ready = true;
            }
            cv.NotifyAll();
        });
    bool result = false;
    {
        std::unique_lock lock(mutex);
        result =
            cv.WaitFor(lock, TC::Duration::FromNanoseconds(INT64_MAX - 1), [&] { return ready; });
    }
    setter.join();
    CHECK(result);
}
