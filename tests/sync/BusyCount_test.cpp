// detail::BusyCount on its own: Drain waits for the scopes begun before it looked, not for the
// ones that keep beginning after (a steady stream of them must not starve it), and never for the
// scopes open on the draining thread's own stack.

#include "SyncTestSupport.h"

#include <TC/Synchronization/detail/BusyCount.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace TC::SyncTests;
using TC::Synchronization::detail::BusyCount;

namespace
{
// Two threads keep `busy` busy without a gap: each opens a scope, lets the other close its
// previous one and open a fresh one, then closes its own. The count never falls to zero, and
// every scope ends within two hand-overs of its beginning.
class OverlappingScopes
{
public:
    explicit OverlappingScopes(BusyCount& busy) : busy_(busy)
    {
        for (int t = 0; t < 2; ++t)
            threads_.emplace_back([this, t] { Run(t); });
        // Returns once the first scope is open, so that a drain started now finds one.
        while (opened_.load() == 0)
            std::this_thread::yield();
    }
    ~OverlappingScopes() { Stop(); }
    OverlappingScopes(const OverlappingScopes&) = delete;
    OverlappingScopes& operator=(const OverlappingScopes&) = delete;

    void Stop()
    {
        stop_.store(true);
        for (std::thread& thread : threads_)
            if (thread.joinable())
                thread.join();
    }

    // Scopes begun so far.
    long Opened() const noexcept { return opened_.load(); }

private:
    void Run(int self)
    {
        while (!stop_.load())
        {
            if (!WaitTurn(self))
                return;
            BusyCount::Scope scope(busy_);
            opened_.fetch_add(1);
            turn_.store(1 - self); // the other one may close its scope and open a new one
            if (!WaitTurn(self))
                return;
        } // ends with the other thread's newer scope open
    }

    bool WaitTurn(int self)
    {
        while (turn_.load() != self)
        {
            if (stop_.load())
                return false;
            std::this_thread::yield();
        }
        return true;
    }

    BusyCount& busy_;
    std::atomic<int> turn_{0};
    std::atomic<long> opened_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

// Runs `drainers` threads that each Drain `busy` once; true if all returned within `deadline`.
// Stops `scopes` either way, so that the drains return and the threads can be joined.
bool DrainsReturnWhileBusy(BusyCount& busy, OverlappingScopes& scopes, int drainers,
                           std::chrono::milliseconds deadline)
{
    std::atomic<int> drained{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < drainers; ++i)
        threads.emplace_back(
            [&]
            {
                busy.Drain();
                drained.fetch_add(1);
            });
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (drained.load() < drainers && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(1ms);
    const bool inTime = drained.load() == drainers;
    scopes.Stop();
    for (std::thread& thread : threads)
        thread.join();
    return inTime;
}
} // namespace

TEST_CASE("BusyCount: a stream of overlapping scopes begun after the look does not starve Drain",
          "[busy]")
{
    BusyCount busy;
    OverlappingScopes scopes(busy);
    const bool inTime = DrainsReturnWhileBusy(busy, scopes, 1, 5s);
    INFO("scopes begun: " << scopes.Opened());
    REQUIRE(inTime);
}

TEST_CASE("BusyCount: drains on several threads at once all return under a stream of scopes",
          "[busy]")
{
    BusyCount busy;
    OverlappingScopes scopes(busy);
    const bool inTime = DrainsReturnWhileBusy(busy, scopes, 3, 5s);
    INFO("scopes begun: " << scopes.Opened());
    REQUIRE(inTime);
}

TEST_CASE("BusyCount: Drain waits for a scope begun before it looked", "[busy]")
{
    for (int round = 0; round < 10; ++round)
    {
        BusyCount busy;
        std::atomic<bool> open{false};
        std::atomic<bool> release{false};
        std::atomic<bool> closed{false};
        std::atomic<bool> drained{false};
        std::thread holder(
            [&]
            {
                {
                    BusyCount::Scope scope(busy);
                    open.store(true);
                    while (!release.load())
                        std::this_thread::yield();
                    closed.store(true); // the scope's last act before it ends
                }
            });
        while (!open.load())
            std::this_thread::yield();
        // Other scopes come and go meanwhile, and a second drainer flips the halves too.
        OverlappingScopes stream(busy);
        std::thread other([&] { busy.Drain(); });
        std::thread releaser(
            [&]
            {
                std::this_thread::sleep_for(2ms);
                release.store(true);
                // Stops the stream if the drain starves on it (a failure the tests above name).
                const auto until = std::chrono::steady_clock::now() + 1s;
                while (!drained.load() && std::chrono::steady_clock::now() < until)
                    std::this_thread::sleep_for(1ms);
                stream.Stop();
            });
        busy.Drain();
        drained.store(true);
        CHECK(closed.load());
        releaser.join();
        holder.join();
        other.join();
    }
}

TEST_CASE("BusyCount: Drain inside the drainer's own scopes does not wait for them", "[busy]")
{
    BusyCount busy;
    std::atomic<bool> otherDrained{false};
    std::thread other;
    {
        BusyCount::Scope outer(busy);
        {
            BusyCount::Scope inner(busy);
            busy.Drain(); // two scopes open, both on this stack
        }
        // Own scopes in both halves: another thread's drain, which must wait for `outer`, moves
        // new scopes to the other half meanwhile.
        other = std::thread(
            [&]
            {
                busy.Drain();
                otherDrained.store(true);
            });
        std::this_thread::sleep_for(10ms);
        {
            BusyCount::Scope later(busy);
            busy.Drain();
        }
        CHECK_FALSE(otherDrained.load());
    }
    other.join();
    CHECK(otherDrained.load());
}
