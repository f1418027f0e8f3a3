// Timed waits of the multi-waiter primitives among untimed ones: a timed-out waiter unlinks
// itself from wherever it is in the chain or list and every untimed one is still released; the
// creator's timed wait claims its own slot back; a timed waiter may free a one-word event at once.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
// Untimed waiters of every kind with timed ones between them: the timed ones unlink themselves
// from wherever they are in the chain, and `open` must still release every untimed one.
template <class Primitive, class Open>
void TimedOutWaitersLeaveTheOthers(Primitive& primitive, Open open)
{
    TC::EnableTimers();
    constexpr int kWaiters = 10;
    constexpr int kTimed = 5;
    std::atomic<int> passed{0}, timedOut{0};
    Waiters w;
    for (int i = 0; i < kWaiters; ++i)
    {
        const WaiterKind kind = kAllKinds[i % 3];
        if (i % 2 == 1)
        {
            w.Start(
                kind, [&] { timedOut += primitive.Wait(20ms) ? 0 : 1; },
                [&]
                {
                    auto f = [&](bool ok) { timedOut += ok ? 0 : 1; };
                    using Awaiter = decltype(primitive.WaitAsync(20ms));
                    return Then<Awaiter, decltype(f)>{primitive.WaitAsync(20ms), f};
                });
        }
        else
        {
            w.Start(
                kind,
                [&]
                {
                    primitive.Wait();
                    passed += 1;
                },
                [&]
                {
                    auto f = [&] { passed += 1; };
                    using Awaiter = decltype(primitive.WaitAsync());
                    return Then<Awaiter, decltype(f)>{primitive.WaitAsync(), f};
                });
        }
    }
    CHECK(Eventually([&] { return timedOut.load() == kTimed; }));
    CHECK(w.WaitFinished(kTimed));
    CHECK(passed == 0);
    CHECK(primitive.IsSuspended());
    open(kWaiters - kTimed);
    CHECK(w.WaitFinished(kWaiters));
    w.JoinAll();
    CHECK(passed == kWaiters - kTimed);
    CHECK(timedOut == kTimed);
    CHECK_FALSE(primitive.IsSuspended());
}
} // namespace

TEST_CASE("Timed-out waiters leave the untimed ones of a ManualResetEvent waiting for the Set",
          "[timed][event]")
{
    ManualResetEvent event;
    TimedOutWaitersLeaveTheOthers(event, [&](int) { event.Set(); });
}

TEST_CASE("Timed-out waiters leave the untimed ones of a Latch waiting for the count",
          "[timed][latch]")
{
    Latch latch(1);
    TimedOutWaitersLeaveTheOthers(latch, [&](int) { latch.CountDown(); });
}

TEST_CASE("Timed-out waiters leave the untimed ones of an AutoResetEvent, one Set each",
          "[timed][event]")
{
    AutoResetEvent event;
    TimedOutWaitersLeaveTheOthers(event,
                                  [&](int n)
                                  {
                                      for (int i = 0; i < n; ++i)
                                          event.Set();
                                  });
}

TEST_CASE("Timed-out waiters leave the untimed ones of a WaitGroup waiting for Done",
          "[timed][waitgroup]")
{
    WaitGroup group(1);
    TimedOutWaitersLeaveTheOthers(group, [&](int) { group.Done(); });
}

TEST_CASE("The creator of a WaitGroup and an AutoResetEvent times out and is resumed in time",
          "[timed][waitgroup]")
{
    // The constructing thread waits in its own slot: its timeout claims that slot back.
    TC::EnableTimers();
    WaitGroup group(1);
    AutoResetEvent event;
    CHECK_FALSE(group.Wait(5ms));
    CHECK_FALSE(event.Wait(5ms));
    CHECK_FALSE(group.IsSuspended());
    CHECK_FALSE(event.IsSuspended());
    std::thread other(
        [&]
        {
            std::this_thread::sleep_for(10ms);
            group.Done();
            std::this_thread::sleep_for(10ms);
            event.Set();
        });
    CHECK(group.Wait(60s));
    CHECK(event.Wait(60s));
    other.join();
    CHECK_FALSE(event.TryWait()); // the creator took the one signal
}

namespace
{
// A converted thread waits with a short random timeout on a fresh object that another thread
// opens; the waiter frees it at once when its wait passed (the opening may still be running:
// ASan catches any access after its claim), or after the opening when it timed out.
template <class Primitive, class Open>
void TimedWaiterDestroysAtOnce(Open open)
{
    TC::EnableTimers();
    const int rounds = static_cast<int>(Scaled(100000));
    std::atomic<Primitive*> current{nullptr};
    std::atomic<int> opened{0};
    std::thread opener(
        [&]
        {
            for (int i = 0; i < rounds; ++i)
            {
                Primitive* primitive = nullptr;
                while ((primitive = current.exchange(nullptr)) == nullptr)
                    std::this_thread::yield();
                for (int spin = 0; spin < (i % 64) * 16; ++spin)
                    TC::detail::CpuRelax();
                open(*primitive);
                opened.store(i + 1);
            }
        });
    std::minstd_rand random(std::random_device{}());
    int passed = 0;
    for (int i = 0; i < rounds; ++i)
    {
        auto* primitive = new Primitive(1);
        current.store(primitive);
        if (primitive->Wait(std::chrono::microseconds(random() % 50)))
            ++passed;
        else
            while (opened.load() < i + 1)
                std::this_thread::yield();
        delete primitive;
    }
    opener.join();
    CHECK(passed > 0);
}

// ManualResetEvent's constructor takes the initial state: a wrapper that starts it unset.
struct UnsetEvent : ManualResetEvent
{
    explicit UnsetEvent(int) : ManualResetEvent(false) {}
};
} // namespace

TEST_CASE("A timed waiter may destroy a ManualResetEvent or a Latch as soon as its Wait returns",
          "[timed][event][lifetime]")
{
    TimedWaiterDestroysAtOnce<UnsetEvent>([](UnsetEvent& event) { event.Set(); });
    TimedWaiterDestroysAtOnce<Latch>([](Latch& latch) { latch.CountDown(); });
}
