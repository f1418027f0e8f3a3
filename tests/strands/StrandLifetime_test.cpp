// A coroutine on a strand parked through the kernel (SuspendTaskAsync, and the sync primitives
// built on it) while its Strand is destroyed: the resumer that comes later reaches the strand's
// state through the parked awaiter's KeepAlive(), finds it closed, and frees the detached chain
// (ParkedWork's abandon) without running anything on the dead strand.

#include "StrandsTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Latch.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;

namespace
{
// Publishes the parked handle; a test resumes it from another thread.
class ParkingLot final : public ISuspendCallback
{
public:
    void OnSuspended(SuspendedTask task) noexcept override { parked_.store(task); }
    SuspendedTask WaitParked()
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        SuspendedTask task = parked_.load();
        while (!task && std::chrono::steady_clock::now() < deadline)
        {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            task = parked_.load();
        }
        return task;
    }

private:
    std::atomic<SuspendedTask> parked_{};
};

struct Seen
{
    std::atomic<int> parked{0};
    std::atomic<int> after{0}; // ran past the park: must stay 0 once the strand is gone
};

DetachedTask ParkOnCallback(Strand* strand, ParkingLot* lot, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    seen->parked.fetch_add(1);
    co_await SuspendTaskAsync(lot);
    seen->after.fetch_add(1);
}

Task<void> ParkChild(ParkingLot* lot, Seen* seen)
{
    FrameSentinel sentinel;
    seen->parked.fetch_add(1);
    co_await SuspendTaskAsync(lot);
    seen->after.fetch_add(1);
}

Task<void> FinishChild()
{
    FrameSentinel sentinel;
    co_return;
}

DetachedTask ParkUnderWhenAll(Strand* strand, ParkingLot* lot, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    co_await WhenAll(ParkChild(lot, seen), FinishChild());
    seen->after.fetch_add(1);
}

// Owned (a Task): the sync primitives' awaiters erase the promise type, so a park on one names
// no unowned root, and a strand that drops it leaves the frame to its owner.
Task<void> ParkOnLatch(Strand* strand, Synchronization::Latch* latch, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    seen->parked.fetch_add(1);
    co_await latch->WaitAsync();
    seen->after.fetch_add(1);
}

void WaitForCount(const std::atomic<int>& counter, int expected)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (counter.load() != expected && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// A strand whose hook holds `alive`: its state is freed exactly when alive.use_count() drops.
std::unique_ptr<Strand> MakeStrand(IExecutor& base, const std::shared_ptr<int>& alive)
{
    StrandOptions options;
    options.aroundTask = [alive](RunTask& task) { task(); };
    return std::make_unique<Strand>(base, std::move(options));
}
} // namespace

TEST_CASE("A coroutine parked on a kernel callback outlives its destroyed strand safely",
          "[strands][lifetime]")
{
    Scheduler scheduler(2u);
    Seen seen;
    ParkingLot lot;
    auto alive = std::make_shared<int>(0);
    auto strand = MakeStrand(scheduler, alive);
    ParkOnCallback(strand.get(), &lot, &seen);
    const SuspendedTask parked = lot.WaitParked();
    REQUIRE(parked);
    strand->WaitIdle();
    strand.reset(); // the parked awaiter still holds the strand's state
    CHECK(alive.use_count() == 2);
    CHECK(FrameSentinel::live.load() == 1);
    std::thread([parked] { ResumeTask(parked); }).join();
    // Dropped by the closed strand: the detached chain is freed from its root, then the state.
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(seen.after.load() == 0);
    CHECK(alive.use_count() == 1);
}

TEST_CASE("A chain parked under WhenAll on a destroyed strand is freed from its root",
          "[strands][lifetime]")
{
    Scheduler scheduler(2u);
    Seen seen;
    ParkingLot lot;
    auto alive = std::make_shared<int>(0);
    auto strand = MakeStrand(scheduler, alive);
    ParkUnderWhenAll(strand.get(), &lot, &seen);
    const SuspendedTask parked = lot.WaitParked();
    REQUIRE(parked);
    strand->WaitIdle();
    strand.reset();
    CHECK(FrameSentinel::live.load() == 2); // the root and the parked child
    std::thread([parked] { ResumeTask(parked); }).join();
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(seen.after.load() == 0);
    CHECK(alive.use_count() == 1);
}

TEST_CASE("A coroutine parked on a Latch outlives its destroyed strand safely",
          "[strands][lifetime]")
{
    Scheduler scheduler(2u);
    Seen seen;
    auto alive = std::make_shared<int>(0);
    auto strand = MakeStrand(scheduler, alive);
    Synchronization::Latch latch(1);
    {
        Task<void> task = ParkOnLatch(strand.get(), &latch, &seen);
        task.GetHandle().resume(); // hops onto the strand, then parks on the latch there
        WaitForCount(seen.parked, 1);
        REQUIRE(seen.parked.load() == 1);
        strand->WaitIdle();
        strand.reset();
        CHECK(alive.use_count() == 2); // held by the parked awaiter
        std::thread([&latch] { latch.CountDown(); }).join();
        CHECK(seen.after.load() == 0); // dropped by the closed strand: nothing ran
        CHECK_FALSE(task.Done());
        CHECK(FrameSentinel::live.load() == 1); // left to its owner
    } // the owner frees the frame, and with it the strand's state
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(alive.use_count() == 1);
}
