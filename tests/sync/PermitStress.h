#pragma once
// The permit-conservation stress shared by Semaphore and SplitGate (Channel's gate): three
// tasks, a thread and a coroutine acquire (untimed, timed, polling) while two threads release
// one or three permits at a time; no permit may be made or lost and every acquirer must finish.

#include "SyncTestSupport.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <thread>
#include <vector>

namespace TC::SyncTests
{
// The acquirers' shared counts and their one rule for which acquire a round makes, what it
// counts and when they stop. `Gate` has Available().
template <class Gate>
struct PermitTally
{
    Gate& gate;
    std::atomic<bool> releasing{true};
    std::atomic<std::int64_t> acquired{0};
    std::atomic<int> finished{0};

    // Untimed only while releases are still coming (one that came late is freed by the test).
    bool Untimed(std::uint64_t round) const { return round % 4 == 0 && releasing.load(); }
    // Counts one attempt in `local`; false once the releasers are done and a failed attempt
    // finds no permit left.
    bool Count(bool got, std::int64_t& local) const
    {
        if (got)
        {
            ++local;
            return true;
        }
        return releasing.load() || gate.Available() != 0;
    }
    void Finish(std::int64_t local)
    {
        acquired += local;
        finished.fetch_add(1);
    }
};

// Runs the stress on `gate`, made with `initial` permits. `acquire(gate, round, untimed)` makes
// one attempt of a task's or the thread's round and returns whether it took a permit (untimed:
// it must); `startCoroutine(waiters, tally)` starts the coroutine acquirer, which ends with
// tally.Finish. Once the releasers are done, a permit now and then frees an untimed acquire
// that began before `releasing` turned false. Checks acquired + left == initial + released.
template <class Gate, class Acquire, class StartCoroutine>
void RunPermitConservationStress(Gate& gate, std::int64_t initial, std::int64_t perReleaser,
                                 Acquire acquire, StartCoroutine startCoroutine)
{
    using namespace std::chrono_literals;
    PermitTally<Gate> tally{gate};
    auto body = [&]
    {
        std::int64_t local = 0;
        for (std::uint64_t round = 0;; ++round)
            if (!tally.Count(acquire(gate, round, tally.Untimed(round)), local))
                break;
        tally.Finish(local);
    };
    Waiters w;
    for (int i = 0; i < 3; ++i)
        w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, body, [] { return std::suspend_never{}; });
    startCoroutine(w, tally);
    std::atomic<std::int64_t> released{0};
    std::vector<std::thread> releasers;
    for (int r = 0; r < 2; ++r)
        releasers.emplace_back(
            [&, r]
            {
                const std::int64_t n = r == 0 ? 1 : 3;
                for (std::int64_t i = 0; i < perReleaser; i += n)
                {
                    gate.Release(n);
                    released += n;
                    if (i % 64 == 0)
                        std::this_thread::yield();
                }
            });
    for (auto& releaser : releasers)
        releaser.join();
    tally.releasing = false;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (tally.finished.load() < 5 && std::chrono::steady_clock::now() < deadline)
    {
        gate.Release(1);
        released += 1;
        std::this_thread::sleep_for(1ms);
    }
    REQUIRE(tally.finished.load() == 5);
    CHECK(w.WaitFinished(4, 10s));
    CHECK(tally.acquired.load() + gate.Available() == initial + released.load());
}
} // namespace TC::SyncTests
