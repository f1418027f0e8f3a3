// Latch, WaitGroup, Barrier and primitives built by hand on Suspendable / Waitable.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

TEST_CASE("Latch releases waiters of every kind once counted down", "[latch]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Latch latch(3);
        Waiters w;
        for (int i = 0; i < 3; ++i)
            w.Start(
                kind, [&] { latch.Wait(); }, [&] { return latch.WaitAsync(); });
        latch.CountDown();
        latch.CountDown();
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        CHECK(latch.Count() == 1);
        latch.CountDown();
        CHECK(w.WaitFinished(3));
        latch.Wait(); // open for good
        CHECK(latch.TryWait());
    }
}

TEST_CASE("WaitGroup waits for every Done and can be reused", "[waitgroup]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        WaitGroup group;
        group.Wait(); // zero: passes
        group.Add(2);
        Waiters w;
        w.Start(
            kind, [&] { group.Wait(); }, [&] { return group.WaitAsync(); });
        group.Done();
        std::this_thread::sleep_for(20ms);
        CHECK(w.Finished() == 0);
        group.Done();
        CHECK(w.WaitFinished(1));
        group.Add(1); // reused
        w.Start(
            kind, [&] { group.Wait(); }, [&] { return group.WaitAsync(); });
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 1);
        group.Done();
        CHECK(w.WaitFinished(2));
    }
}

TEST_CASE("Barrier completes each phase with one serial arrival, any mix of waiters", "[barrier]")
{
    constexpr int kPhases = 50;
    Barrier barrier(3);
    std::atomic<int> serial{0};
    std::atomic<int> arrivals{0};
    std::atomic<bool> phaseBroken{false};
    Waiters w;
    std::atomic<int> perPhase[kPhases] = {};
    auto blocking = [&]
    {
        for (int phase = 0; phase < kPhases; ++phase)
        {
            perPhase[phase].fetch_add(1);
            if (barrier.ArriveAndWait())
                serial.fetch_add(1);
            // Nobody passes phase p before all three arrived in it.
            if (perPhase[phase].load() != 3)
                phaseBroken = true;
            arrivals.fetch_add(1);
        }
    };
    w.Start(WaiterKind::Task, blocking, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, blocking, [] { return std::suspend_never{}; });
    struct Coro
    {
        static Fire Run(Waiters& w, Barrier& barrier, std::atomic<int>* perPhase,
                        std::atomic<int>& serial, std::atomic<int>& arrivals,
                        std::atomic<bool>& broken, std::atomic<bool>& done)
        {
            co_await w.GetScheduler().Schedule();
            for (int phase = 0; phase < kPhases; ++phase)
            {
                perPhase[phase].fetch_add(1);
                if (co_await barrier.ArriveAndWaitAsync())
                    serial.fetch_add(1);
                if (perPhase[phase].load() != 3)
                    broken = true;
                arrivals.fetch_add(1);
            }
            done = true;
        }
    };
    std::atomic<bool> coroDone{false};
    Coro::Run(w, barrier, perPhase, serial, arrivals, phaseBroken, coroDone);
    CHECK(w.WaitFinished(2));
    CHECK(Eventually([&] { return coroDone.load(); }));
    CHECK(serial == kPhases);
    CHECK(arrivals == 3 * kPhases);
    CHECK_FALSE(phaseBroken);
}

namespace
{
// A hand-made Single primitive on Waitable: a counter that passes when positive. A resumed
// waiter does not call TryWait again, so Add takes the ticket on the waiter's behalf first.
class Tickets : public Waitable<SuspensionKind::Single, Tickets>
{
public:
    void Add()
    {
        count_.fetch_add(1);
        if (IsSuspended() && TryWait())
            Resume();
    }
    bool TryWait()
    {
        int count = count_.load();
        while (count > 0)
            if (count_.compare_exchange_weak(count, count - 1))
                return true;
        return false;
    }
    // The ticket a successful TryWait took goes to the waiter, or back if it is gone.
    void Resume()
    {
        if (!SuspendableBase<SuspensionKind::Single>::Resume())
            Add();
    }

private:
    std::atomic<int> count_{0};
};

// A hand-made primitive on Suspendable: the waiter loops itself.
class Flag : public Suspendable<SuspensionKind::Single, Flag>
{
public:
    void Raise()
    {
        raised_.store(true);
        Resume();
    }
    void WaitRaised()
    {
        while (!raised_.load())
            Suspend();
    }
    void TryResume()
    {
        ++tryResumeCalls;
        if (raised_.load())
            Resume();
    }
    std::atomic<int> tryResumeCalls{0};

private:
    std::atomic<bool> raised_{false};
};
} // namespace

TEST_CASE("Waitable<Single>: Wait, timed Wait and co_await on a hand-made primitive",
          "[waitable][timeout]")
{
    TC::EnableTimers();
    Tickets tickets;
    CHECK_FALSE(tickets.Wait(2ms)); // timed out: nobody added
    CHECK_FALSE(tickets.IsSuspended());
    tickets.Add();
    CHECK(tickets.Wait(2ms));
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Waiters w;
        w.Start(
            kind, [&] { tickets.Wait(); }, [&] { return tickets.WaitAsync(); });
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 0);
        tickets.Add();
        CHECK(w.WaitFinished(1));
    }
}

TEST_CASE("Suspendable calls TryResume after publishing the waiter", "[waitable]")
{
    Flag flag;
    TC::Scheduler scheduler(1u);
    auto waiter = scheduler.Start([&] { flag.WaitRaised(); });
    CHECK(Eventually([&] { return flag.IsSuspended(); }));
    // TryResume runs just after the publication that IsSuspended sees, on the waiter's worker.
    CHECK(Eventually([&] { return flag.tryResumeCalls.load() >= 1; }));
    flag.Raise();
    waiter.Join();
    CHECK_FALSE(flag.IsSuspended());
}

namespace
{
// A gate on Waitable with a Recheck of its own: the re-check after publishing must call it, and
// TryWait only before the waiter suspends.
class RecheckedGate : public Waitable<SuspensionKind::Multiple, RecheckedGate>
{
public:
    void Open()
    {
        open_.store(true);
        if (IsSuspendedAfterSeqCstChange())
            Resume();
    }
    bool TryWait()
    {
        ++tryWaitCalls;
        return open_.load();
    }
    bool Recheck()
    {
        ++recheckCalls;
        return open_.load();
    }
    void Resume() { SuspendableBase<SuspensionKind::Multiple>::Resume(); }
    std::atomic<int> tryWaitCalls{0};
    std::atomic<int> recheckCalls{0};

private:
    std::atomic<bool> open_{false};
};
} // namespace

TEST_CASE("Waitable calls T::Recheck, not TryWait, after publishing", "[waitable]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        RecheckedGate gate;
        Waiters w;
        w.Start(
            kind, [&] { gate.Wait(); }, [&] { return gate.WaitAsync(); });
        REQUIRE(Eventually([&] { return gate.recheckCalls.load() == 1; }));
        CHECK(gate.tryWaitCalls == 1);
        CHECK(w.Finished() == 0);
        gate.Open();
        CHECK(w.WaitFinished(1));
        CHECK(gate.tryWaitCalls == 1); // a resumed waiter has passed: no TryWait after it
        CHECK(gate.recheckCalls == 1);
    }
}

namespace
{
// Opens with ResumeNonReentrant; a waiter resumed inline (a coroutine with no executor) opens it
// again from inside that resume, which must hand over instead of recursing.
class Gate : public Waitable<SuspensionKind::Multiple, Gate>
{
public:
    void Open()
    {
        open_.store(true);
        ++depth;
        maxDepth = depth > maxDepth ? depth : maxDepth;
        ResumeNonReentrant();
        --depth;
    }
    void Close() { open_.store(false); }
    bool TryWait() { return open_.load(); }
    void Resume() { ResumeNonReentrant(); }
    int depth = 0;
    int maxDepth = 0;

private:
    std::atomic<bool> open_{false};
};

Fire ReopenAfterWait(Gate& gate, std::vector<int>& log, int id, int spawn)
{
    co_await gate; // no executor here: resumed inline by whoever opens the gate
    log.push_back(id);
    if (spawn != 0)
    {
        gate.Close();
        ReopenAfterWait(gate, log, spawn, 0); // a new waiter, suspended on the closed gate
    }
    gate.Open(); // re-entrant: hands its request to the Open that is resuming us
    log.push_back(-id);
}
} // namespace

TEST_CASE("ResumeNonReentrant hands a re-entrant call over instead of recursing", "[waitable]")
{
    Gate gate;
    std::vector<int> log;
    ReopenAfterWait(gate, log, 1, 0);
    ReopenAfterWait(gate, log, 2, 3);
    REQUIRE(log.empty());
    gate.Open();
    // Newest first. Waiter 2 re-closes the gate, adds waiter 3 and opens again from inside the
    // outer Open's resume: that inner Open returns at once (-2 before 3 runs), the outer call
    // finishes its snapshot (1) and then serves the handed-over request (3). A recursive Resume
    // would have run 3 inside 2's Open: 2, 3, -3, -2, 1, -1.
    CHECK(log == std::vector<int>{2, -2, 1, -1, 3, -3});
    CHECK_FALSE(gate.IsSuspended());
}

namespace
{
// Holds a re-check (the call a waiter's publication makes into the object, on the thread the
// waiter suspended from) until released, and records whether the object was freed meanwhile.
// Kept outside the object, so that an object freed too early does not take it along.
struct RecheckControl
{
    std::atomic<bool> entered{false};
    std::atomic<bool> release{false};
    std::atomic<bool> destroyed{false};
    std::atomic<bool> usedAfterFree{false}; // checked by the test's thread (Catch2 is not thread-safe)

    void Hold()
    {
        entered.store(true);
        while (!release.load())
            std::this_thread::yield();
        if (destroyed.load())
            usedAfterFree.store(true); // the caller's next access would read freed memory
    }
};

// A Multiple primitive whose re-check (the TryWait inside the publication) is held.
class HeldGate : public Waitable<SuspensionKind::Multiple, HeldGate>
{
public:
    explicit HeldGate(RecheckControl& control) : control_(control) {}
    bool TryWait()
    {
        if (calls_.fetch_add(1) == 1) // the first call is Wait's own; the second, the re-check
            control_.Hold();
        return open_.load(); // ASan: a use after free if the waiter could free the gate meanwhile
    }
    void Resume() { Waitable::Resume(); }
    void Open()
    {
        open_.store(true);
        Resume();
    }

private:
    RecheckControl& control_;
    std::atomic<int> calls_{0};
    std::atomic<bool> open_{false};
};

// The Single kind's counterpart: a Suspendable whose re-check (TryResume) is held.
class HeldSlot : public Suspendable<SuspensionKind::Single, HeldSlot>
{
public:
    explicit HeldSlot(RecheckControl& control) : control_(control) {}
    void Wait()
    {
        while (!open_.load())
            Suspend();
    }
    void Open()
    {
        open_.store(true);
        Resume();
    }
    void TryResume()
    {
        control_.Hold();
        if (open_.load())
            Resume();
    }

private:
    RecheckControl& control_;
    std::atomic<bool> open_{false};
};

// The waiter frees the object as soon as its wait returns, as the documented lifetimes allow
// (for Multiple, the waiter is the creator: it constructs the object inside its task). Its
// re-check is held on the worker it left while this thread opens the object, so it runs again on
// the other worker: its wait must not return until the re-check has left the object.
template <class Held>
void CheckWaitOutlivesRecheck()
{
    RecheckControl control;
    std::atomic<bool> returned{false};
    std::atomic<Held*> made{nullptr};
    TC::Scheduler scheduler(2u);
    auto waiter = scheduler.Start(
        [&]
        {
            auto* object = new Held(control);
            made.store(object);
            object->Wait();
            returned.store(true);
            delete object;
            control.destroyed.store(true);
        });
    REQUIRE(Eventually([&] { return control.entered.load(); }));
    made.load()->Open();
    std::this_thread::sleep_for(50ms);
    CHECK_FALSE(returned.load()); // still waiting out the re-check
    control.release.store(true);
    waiter.Join();
    CHECK(returned.load());
    CHECK_FALSE(control.usedAfterFree.load());
}
} // namespace

TEST_CASE("A Multiple creator's wait returns only after its own re-check has left the object",
          "[waitable]")
{
    CheckWaitOutlivesRecheck<HeldGate>();
}

TEST_CASE("A Single waiter's wait returns only after its own re-check has left the object",
          "[waitable]")
{
    CheckWaitOutlivesRecheck<HeldSlot>();
}

namespace
{
// Closed until the fourth TryWait: the re-check of the second coroutine to wait (calls: first
// waiter's ready and re-check, second waiter's ready, then its re-check) finds it open.
class OpensOnFourthCheck : public Waitable<SuspensionKind::Multiple, OpensOnFourthCheck>
{
public:
    bool TryWait() { return ++calls_ >= 4; }
    void Resume() { Waitable::Resume(); }

private:
    int calls_ = 0; // one thread only
};

Fire AwaitAndLog(OpensOnFourthCheck& gate, std::vector<int>& log, int id)
{
    co_await gate; // no executor: resumed inline by whoever resumes it
    log.push_back(id);
}
} // namespace

TEST_CASE("A coroutine resumed inline from another waiter's re-check does not wait for it",
          "[waitable]")
{
    // The second coroutine's re-check opens the gate and resumes both waiters: itself (its
    // await_suspend returns false) and the first, inline, from inside that re-check. The first
    // must not wait out a publication that is below it on its own thread's stack.
    OpensOnFourthCheck gate;
    std::vector<int> log;
    AwaitAndLog(gate, log, 1);
    REQUIRE(log.empty());
    AwaitAndLog(gate, log, 2);
    CHECK(log == std::vector<int>{1, 2});
    CHECK_FALSE(gate.IsSuspended());
}

namespace
{
Fire AwaitLatch(Latch& latch, bool& passed)
{
    co_await latch; // no executor: resumed inline by the CountDown that opens it
    passed = true;
}
} // namespace

TEST_CASE("A coroutine resumed inline by CountDown does not wait for that CountDown", "[latch]")
{
    Latch latch(1);
    bool passed = false;
    AwaitLatch(latch, passed);
    REQUIRE_FALSE(passed);
    latch.CountDown(); // resumes the coroutine inline, from inside CountDown
    CHECK(passed);
}
