// SplitGate, the counting gate under Channel: waiters of every kind, Close, and the two things its
// split counters could get wrong -- a permit lost or made between the counters and the waiter
// queue, and a wake-up lost between a waiter's count and a release.

#include "PermitStress.h"
#include "SyncTestSupport.h"

#include <TC/Synchronization/detail/SplitGate.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;
using TC::Synchronization::detail::AcquireResult;
using TC::Synchronization::detail::SplitGate;

namespace
{
// co_await on the gate, the result recorded.
Fire AwaitGate(Waiters& w, SplitGate& gate, std::atomic<int>& result)
{
    co_await w.GetScheduler().Schedule();
    result = static_cast<int>(co_await SplitGate::AcquireAwaiter(gate));
}

// Starts one acquirer of `kind` on `gate`; what its Acquire or co_await yielded lands in `result`.
void StartAcquirer(WaiterKind kind, Waiters& w, SplitGate& gate, std::atomic<int>& result)
{
    if (kind == WaiterKind::Coroutine)
        AwaitGate(w, gate, result);
    else
        w.Start(
            kind, [&] { result = static_cast<int>(gate.Acquire()); },
            [] { return std::suspend_never{}; });
}
} // namespace

TEST_CASE("SplitGate hands each release to a waiter of every kind", "[gate]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        SplitGate gate(1);
        CHECK(gate.TryAcquire());
        CHECK_FALSE(gate.TryAcquire());
        std::atomic<int> result{0};
        Waiters w;
        StartAcquirer(kind, w, gate, result);
        std::this_thread::sleep_for(5ms); // usually suspended by now; either way it must pass
        gate.Release(1);
        CHECK(Eventually([&] { return result.load() != 0; }));
        CHECK(result.load() == static_cast<int>(AcquireResult::Acquired));
        CHECK(gate.Available() == 0);
    }
}

TEST_CASE("SplitGate Close resumes waiters with Closed; permits released around it are acquired",
          "[gate]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        SplitGate gate;
        std::atomic<int> result{0};
        Waiters w;
        StartAcquirer(kind, w, gate, result);
        std::this_thread::sleep_for(5ms);
        gate.Close();
        CHECK(Eventually([&] { return result.load() != 0; }));
        CHECK(result.load() == static_cast<int>(AcquireResult::Closed));
        w.JoinAll();
        CHECK(gate.IsClosed());
        CHECK(gate.Acquire() == AcquireResult::Closed); // nothing left: no wait
        gate.Release(2);                                // after the Close: still acquired
        CHECK(gate.TryAcquireOrClosed() == AcquireResult::Acquired);
        CHECK(gate.Acquire() == AcquireResult::Acquired);
        CHECK(gate.TryAcquireOrClosed() == AcquireResult::Closed);
    }
}

TEST_CASE("SplitGate with a spin batch: a spinning thread takes fewer permits than the batch",
          "[gate]")
{
    // The batch only stretches the spin: a lone permit, released at any moment of it or after
    // the thread suspended, is taken, and so is a full batch.
    for (std::int64_t permits : {1, 8})
        for (int delayMicroseconds : {0, 1, 5, 2000})
        {
            INFO("permits " << permits << ", released after " << delayMicroseconds << " us");
            SplitGate gate(0, 8);
            std::atomic<int> result{0};
            std::atomic<bool> started{false};
            std::thread acquirer(
                [&]
                {
                    started = true;
                    result = static_cast<int>(gate.Acquire());
                });
            while (!started)
                std::this_thread::yield();
            std::this_thread::sleep_for(std::chrono::microseconds(delayMicroseconds));
            gate.Release(permits);
            CHECK(Eventually([&] { return result.load() != 0; }));
            acquirer.join();
            CHECK(result.load() == static_cast<int>(AcquireResult::Acquired));
            CHECK(gate.Available() == permits - 1);
        }
}

TEST_CASE("SplitGate's timed Acquire times out, and a later release is not lost", "[gate][timeout]")
{
    TC::EnableTimers();
    SplitGate gate;
    CHECK(gate.Acquire(1ms) == AcquireResult::TimedOut);
    gate.Release(1);
    CHECK(gate.Available() == 1);
    CHECK(gate.Acquire(1ms) == AcquireResult::Acquired);
    CHECK(gate.Available() == 0);
}

namespace
{
// The coroutine acquirer: the gate has no timed awaiter, so untimed awaits and polling.
Fire AcquireAsCoroutine(Waiters& w, PermitTally<SplitGate>& tally)
{
    co_await w.GetScheduler().Schedule();
    std::int64_t local = 0;
    for (std::uint64_t round = 0;; ++round)
    {
        bool got = true;
        if (tally.Untimed(round))
            got = co_await SplitGate::AcquireAwaiter(tally.gate) == AcquireResult::Acquired;
        else
            got = tally.gate.TryAcquire();
        if (!tally.Count(got, local))
            break;
    }
    tally.Finish(local);
}
} // namespace

// Three tasks, a thread and a coroutine acquire (untimed, timed 0-15 us, polling) while two
// threads release one or three permits at a time (tests/sync/PermitStress.h). A permit granted
// to a waiter that then timed out, or found one itself, is parked, never lost: acquired + left
// == initial + released, and every acquirer finishes.
TEST_CASE("Stress: SplitGate under racing releases and timed acquires conserves permits",
          "[stress][gate][timeout]")
{
    TC::EnableTimers();
    constexpr std::int64_t kInitial = 2;
    SplitGate gate(kInitial);
    RunPermitConservationStress(
        gate, kInitial, Scaled(100000),
        [](SplitGate& g, std::uint64_t round, bool untimed)
        {
            if (untimed)
                return g.Acquire() == AcquireResult::Acquired;
            if (round % 4 == 1)
                return g.TryAcquire();
            return g.Acquire(std::chrono::microseconds(round % 16)) == AcquireResult::Acquired;
        },
        [](Waiters& w, PermitTally<SplitGate>& tally) { AcquireAsCoroutine(w, tally); });
}

// Rounds of one waiter and one release of a single permit, the release after a random short
// spin, so that it lands before the waiter counts itself, between its count and its look, and
// after it suspended. A lost wake-up leaves the waiter suspended with the permit counted: the
// releaser then reports the round and frees it with a second permit.
TEST_CASE("Stress: SplitGate loses no wake-up between a waiter's count and a release",
          "[stress][gate]")
{
    // The thread twice: a spin batch above one (a bounded Channel's room gate) stretches its
    // spin, and the release must still find it spinning, counted or suspended.
    const std::pair<WaiterKind, std::uint64_t> cases[] = {
        {WaiterKind::Task, 1}, {WaiterKind::Thread, 1}, {WaiterKind::Thread, 8}};
    for (auto [kind, spinBatch] : cases)
    {
        INFO("waiter: " << Name(kind) << ", spin batch " << spinBatch);
        const std::int64_t rounds = Scaled(spinBatch > 1 ? 50000 : 200000);
        SplitGate gate(0, spinBatch);
        std::atomic<std::int64_t> started{0};
        std::atomic<std::int64_t> passed{0};
        std::atomic<std::int64_t> refused{0}; // Acquires that did not say Acquired
        std::int64_t lost = 0;
        Waiters w(1);
        w.Start(
            kind,
            [&]
            {
                for (std::int64_t round = 1; round <= rounds; ++round)
                {
                    started.store(round, std::memory_order_release);
                    if (gate.Acquire() != AcquireResult::Acquired)
                        refused.fetch_add(1);
                    passed.store(round, std::memory_order_release);
                }
            },
            [] { return std::suspend_never{}; });
        // Spins (yielding) until the waiter passed `round`; false after `limit`.
        auto passedWithin = [&](std::int64_t round, std::chrono::seconds limit)
        {
            const auto deadline = std::chrono::steady_clock::now() + limit;
            for (unsigned spin = 0; passed.load(std::memory_order_acquire) != round; ++spin)
            {
                std::this_thread::yield();
                if (spin % 1024 == 0 && std::chrono::steady_clock::now() > deadline)
                    return false;
            }
            return true;
        };
        std::uint32_t seed = 11;
        for (std::int64_t round = 1; round <= rounds; ++round)
        {
            while (started.load(std::memory_order_acquire) != round)
                std::this_thread::yield();
            seed = seed * 1103515245u + 12345u;
            for (std::uint32_t i = (seed >> 16) % 1000; i > 0; --i)
                TC::detail::CpuRelax();
            gate.Release(1);
            if (!passedWithin(round, 10s))
            {
                ++lost;
                gate.Release(1);
                REQUIRE(passedWithin(round, 10s));
                REQUIRE(gate.TryAcquire()); // the lost round's permit, still counted
            }
        }
        CHECK(w.WaitFinished(1));
        CHECK(lost == 0);
        CHECK(refused.load() == 0);
        CHECK(gate.Available() == 0);
    }
}
