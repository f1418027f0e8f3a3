// Timed waits on every primitive that has one, from a task, a converted thread and a coroutine:
// a timeout returns false and takes nothing, a wake before the deadline returns true, and a zero
// timeout answers at once.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
// Each subject wraps one primitive in the same shape: Wait(timeout) and WaitAsync(timeout) from
// any waiter, Open() makes the condition hold for one waiter (or all), Passed() is what a waiter
// that got through does with what it got, and Untouched() says a timed-out wait took nothing.
struct LatchSubject
{
    static constexpr const char* kName = "Latch";
    Latch latch{1};
    bool Wait(TC::Duration t) { return latch.Wait(t); }
    auto WaitAsync(TC::Duration t) { return latch.WaitAsync(t); }
    void Open() { latch.CountDown(); }
    void Passed() {}
    bool Untouched() const { return latch.Count() == 1 && !latch.IsSuspended(); }
};

struct WaitGroupSubject
{
    static constexpr const char* kName = "WaitGroup";
    WaitGroup group{1};
    bool Wait(TC::Duration t) { return group.Wait(t); }
    auto WaitAsync(TC::Duration t) { return group.WaitAsync(t); }
    void Open() { group.Done(); }
    void Passed() {}
    bool Untouched() const { return group.Count() == 1 && !group.IsSuspended(); }
};

template <class Event, bool OneWaiter>
struct ManualSubject
{
    static constexpr const char* kName = OneWaiter ? "ManualResetEvent_s" : "ManualResetEvent";
    Event event;
    bool Wait(TC::Duration t) { return event.Wait(t); }
    auto WaitAsync(TC::Duration t) { return event.WaitAsync(t); }
    void Open() { event.Set(); }
    void Passed() {}
    bool Untouched() const { return !event.IsSet() && !event.IsSuspended(); }
};

template <class Event, bool OneWaiter>
struct AutoSubject
{
    static constexpr const char* kName = OneWaiter ? "AutoResetEvent_s" : "AutoResetEvent";
    Event event;
    bool Wait(TC::Duration t) { return event.Wait(t); }
    auto WaitAsync(TC::Duration t) { return event.WaitAsync(t); }
    void Open() { event.Set(); }
    void Passed() {}
    // The signal is still there for the next wait: a timeout took nothing.
    bool Untouched() { return !event.IsSuspended() && !event.TryWait(); }
};

struct SemaphoreSubject
{
    static constexpr const char* kName = "Semaphore";
    Semaphore semaphore{0};
    bool Wait(TC::Duration t) { return semaphore.Acquire(t); }
    auto WaitAsync(TC::Duration t) { return semaphore.AcquireAsync(t); }
    void Open() { semaphore.Release(); }
    void Passed() {}
    bool Untouched() const { return semaphore.Available() == 0; }
};

struct MutexSubject
{
    static constexpr const char* kName = "Mutex";
    Mutex mutex;
    MutexSubject() { mutex.Lock(); } // the test holds it; Open hands it over
    bool Wait(TC::Duration t) { return mutex.TryLockFor(t); }
    auto WaitAsync(TC::Duration t) { return mutex.LockAsync(t); }
    void Open() { mutex.Unlock(); }
    void Passed() { mutex.Unlock(); }
    bool Untouched() const { return mutex.IsLocked(); }
    ~MutexSubject()
    {
        if (mutex.IsLocked())
            mutex.Unlock();
    }
};

struct FutureSubject
{
    static constexpr const char* kName = "Future";
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    bool Wait(TC::Duration t) { return future.Wait(t); }
    auto WaitAsync(TC::Duration t) { return future.WaitAsync(t); }
    void Open() { promise.SetValue(7); }
    void Passed() {}
    bool Untouched() const { return future.Valid() && !future.IsReady(); }
};

using Clock = std::chrono::steady_clock;

// Starts one timed wait of `kind` on `subject`; `record(passed)` runs once when it returns.
// One instantiation of Waiters::Start per subject (the record is type-erased): with one per
// call site, GCC 12 at -O3 reported -Wnull-dereference with no source location in inlined code.
template <class Subject>
void StartTimedWait(Waiters& w, WaiterKind kind, Subject& subject, TC::Duration timeout,
                    std::function<void(bool)> record)
{
    w.Start(
        kind,
        [&subject, timeout, record]
        {
            const bool passed = subject.Wait(timeout);
            if (passed)
                subject.Passed();
            record(passed);
        },
        [&subject, timeout, record]
        {
            auto done = [&subject, record](bool passed)
            {
                if (passed)
                    subject.Passed();
                record(passed);
            };
            using Awaiter = decltype(subject.WaitAsync(timeout));
            return Then<Awaiter, decltype(done)>{subject.WaitAsync(timeout), done};
        });
}

template <class Subject>
void TimedWaitContract()
{
    TC::EnableTimers();
    for (WaiterKind kind : kAllKinds)
    {
        INFO(Subject::kName << " waited on by a " << Name(kind));
        { // the timeout fires, not before its time, and takes nothing
            Subject subject;
            std::atomic<int> passed{0}, timedOut{0};
            const auto start = Clock::now();
            std::atomic<Clock::duration> took{};
            {
                Waiters w;
                StartTimedWait(w, kind, subject, 5ms,
                               [&](bool ok)
                               {
                                   took = Clock::now() - start;
                                   (ok ? passed : timedOut) += 1;
                               });
                CHECK(w.WaitFinished(1));
            }
            CHECK(timedOut == 1);
            CHECK(passed == 0);
            CHECK(took.load() >= 5ms);
            CHECK(subject.Untouched());
            subject.Open(); // and the wake after it is there for the next wait
            CHECK(subject.Wait(TC::Duration::Zero()));
            subject.Passed();
        }
        { // a wake before the deadline returns true
            Subject subject;
            std::atomic<int> passed{0}, timedOut{0};
            Waiters w;
            StartTimedWait(w, kind, subject, 60s, [&](bool ok) { (ok ? passed : timedOut) += 1; });
            std::this_thread::sleep_for(10ms);
            CHECK(w.Finished() == 0);
            subject.Open();
            CHECK(w.WaitFinished(1));
            w.JoinAll();
            CHECK(passed == 1);
            CHECK(timedOut == 0);
        }
        { // a zero timeout answers at once: false while closed, true once open
            Subject subject;
            std::atomic<int> passed{0}, timedOut{0};
            {
                Waiters w;
                StartTimedWait(w, kind, subject, TC::Duration::Zero(),
                               [&](bool ok) { (ok ? passed : timedOut) += 1; });
                CHECK(w.WaitFinished(1));
            }
            CHECK(timedOut == 1);
            CHECK(subject.Untouched());
            subject.Open();
            {
                Waiters w;
                StartTimedWait(w, kind, subject, TC::Duration::Zero(),
                               [&](bool ok) { (ok ? passed : timedOut) += 1; });
                CHECK(w.WaitFinished(1));
            }
            CHECK(passed == 1);
            CHECK(timedOut == 1);
        }
    }
}
} // namespace

TEST_CASE("Latch: timed waits from every kind of waiter", "[timed][latch]")
{
    TimedWaitContract<LatchSubject>();
}

TEST_CASE("WaitGroup: timed waits from every kind of waiter", "[timed][waitgroup]")
{
    TimedWaitContract<WaitGroupSubject>();
}

TEST_CASE("ManualResetEvent: timed waits from every kind of waiter", "[timed][event]")
{
    TimedWaitContract<ManualSubject<ManualResetEvent, false>>();
}

TEST_CASE("ManualResetEvent_s: timed waits from every kind of waiter", "[timed][event]")
{
    TimedWaitContract<ManualSubject<ManualResetEvent_s, true>>();
}

TEST_CASE("AutoResetEvent: timed waits from every kind of waiter", "[timed][event]")
{
    TimedWaitContract<AutoSubject<AutoResetEvent, false>>();
}

TEST_CASE("AutoResetEvent_s: timed waits from every kind of waiter", "[timed][event]")
{
    TimedWaitContract<AutoSubject<AutoResetEvent_s, true>>();
}

TEST_CASE("Semaphore: timed acquires from every kind of waiter", "[timed][semaphore]")
{
    TimedWaitContract<SemaphoreSubject>();
}

TEST_CASE("Mutex: TryLockFor and LockAsync(timeout) from every kind of waiter", "[timed][mutex]")
{
    TimedWaitContract<MutexSubject>();
}

TEST_CASE("Future: Wait(timeout) and WaitAsync(timeout) from every kind of waiter",
          "[timed][future]")
{
    TimedWaitContract<FutureSubject>();
}
