// Task frames from a FrameAllocatorScope's allocator: every frame the thread creates in the
// scope comes from it and goes back to it with its size and alignment, wherever it is destroyed;
// frames outside any scope use the frame cache and the heap, and the two never trade blocks;
// scopes nest and a scope ended out of order is refused; the sample FrameArena's Reset refuses
// while a block is outstanding. Its own executable: it counts the global operator new.

#include "DeathTest.h"
#include "support/CountingBlockAllocator.h"
#include "support/CountingNews.h"
#include "support/StressScale.h"

#include "../../samples/support/FrameArena.h"

#include <TC/Core.h>
#include <TC/Strands/FrameAllocator.h>
#include <TC/Strands/SyncRun.h>
#include <TC/Strands/Task.h>

#include <catch2/catch.hpp>

#include <barrier>
#include <coroutine>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

using TC::Strands::FrameAllocatorScope;
using TC::Strands::SyncRun;
using TC::Strands::Task;
using TestSupport::CountingBlockAllocator;

namespace
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kBuildFactor = 0.05;
#elif !defined(NDEBUG)
constexpr double kBuildFactor = 0.2;
#else
constexpr double kBuildFactor = 1;
#endif

long Scaled(long count)
{
    return TCStress::Scale<long>(count, kBuildFactor, 1, 1L << 40);
}

Task<int> Small(int value)
{
    co_return value + 1;
}

// The frame's address, as the coroutine handle gives it.
struct FrameAddress
{
    const void* address = nullptr;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> handle) noexcept
    {
        address = handle.address();
        return false; // continue at once
    }
    const void* await_resume() const noexcept { return address; }
};

Task<const void*> Where()
{
    co_return co_await FrameAddress{};
}

Task<int> Parent(int children)
{
    int sum = 0;
    for (int i = 0; i < children; ++i)
        sum += co_await Small(i);
    co_return sum;
}
} // namespace

TEST_CASE("frames created in a scope come from its allocator and go back to it",
          "[frameallocator]")
{
    {
        FrameArena arena(4096);
        std::optional<Task<int>> task;
        {
            FrameAllocatorScope scope(arena);
            TestSupport::counting = true;
            task.emplace(Small(1));
            TestSupport::counting = false;
        }
        CHECK(TestSupport::allocations.exchange(0) == 0); // nothing from the heap
        CHECK(arena.Outstanding() == 1);
        CHECK(SyncRun(std::move(*task)) == 2);
        task.reset();
        CHECK(arena.Outstanding() == 0);
    }
    CountingBlockAllocator allocator;
    std::optional<Task<int>> task;
    {
        FrameAllocatorScope scope(allocator);
        task.emplace(Small(1));
    }
    CHECK(allocator.Allocations() == 1);
    CHECK(allocator.LastAlignment() == 16);
    CHECK(allocator.LastSize() > 16);
    CHECK(SyncRun(std::move(*task)) == 2); // destroyed outside the scope: back to the allocator
    task.reset();
    CHECK(allocator.Frees() == 1);
    CHECK(allocator.Mismatches() == 0);

    // A chain run in the scope: its children's frames come from the allocator too.
    {
        FrameAllocatorScope scope(allocator);
        CHECK(SyncRun(Parent(10)) == 55);
    }
    CHECK(allocator.Allocations() == 12);
    CHECK(allocator.Frees() == 12);
    CHECK(allocator.Mismatches() == 0);
}

TEST_CASE("frames outside any scope do not touch the allocator", "[frameallocator]")
{
    CountingBlockAllocator allocator;
    {
        FrameAllocatorScope scope(allocator);
    }
    CHECK(SyncRun(Parent(5)) == 15);
    CHECK(allocator.Attempts() == 0);
    // On a fresh thread the first frame comes from operator new (the cache is empty).
    long news = 0;
    std::thread thread(
        [&]
        {
            TestSupport::counting = true;
            Task<int> task = Small(1);
            TestSupport::counting = false;
            news = TestSupport::allocations.exchange(0);
            CHECK(SyncRun(std::move(task)) == 2);
        });
    thread.join();
    CHECK(news == 1);
}

TEST_CASE("scopes nest, the innermost directing frames", "[frameallocator]")
{
    CountingBlockAllocator outer;
    CountingBlockAllocator inner;
    {
        FrameAllocatorScope first(outer);
        CHECK(SyncRun(Small(0)) == 1);
        {
            FrameAllocatorScope second(inner);
            CHECK(SyncRun(Small(0)) == 1);
            CHECK(SyncRun(Small(0)) == 1);
        }
        CHECK(SyncRun(Small(0)) == 1);
    }
    CHECK(outer.Allocations() == 2);
    CHECK(outer.Frees() == 2);
    CHECK(inner.Allocations() == 2);
    CHECK(inner.Frees() == 2);
}

TEST_CASE("a frame destroyed on another thread goes back to its allocator, not that thread's cache",
          "[frameallocator]")
{
    FrameArena arena(64 * 1024);
    std::optional<Task<const void*>> made;
    {
        FrameAllocatorScope scope(arena);
        made.emplace(Where());
    }
    CHECK(arena.Outstanding() == 1);
    std::thread thread(
        [&]
        {
            const void* inArena = SyncRun(std::move(*made));
            made.reset(); // the frame is destroyed on this thread
            CHECK(arena.Contains(inArena));
            // Frames of the same size on this thread, outside any scope: from the heap.
            for (int i = 0; i < 4; ++i)
                CHECK_FALSE(arena.Contains(SyncRun(Where())));
        });
    thread.join();
    CHECK(arena.Outstanding() == 0);
    // And a heap frame freed into this thread's cache never serves a frame in the scope.
    CHECK_FALSE(arena.Contains(SyncRun(Where())));
    {
        FrameAllocatorScope scope(arena);
        CHECK(arena.Contains(SyncRun(Where())));
    }
    CHECK(arena.Outstanding() == 0);
    arena.Reset();
}

TEST_CASE("a scope ended out of order ends the process naming the rule", "[frameallocator]")
{
    const auto result = TestSupport::RunInChild(
        []
        {
            CountingBlockAllocator first;
            CountingBlockAllocator second;
            auto outer = std::make_unique<FrameAllocatorScope>(first);
            auto inner = std::make_unique<FrameAllocatorScope>(second);
            outer.reset();
        });
    TestSupport::RequireRule(result, "FrameAllocatorScope ends in reverse order");
}

TEST_CASE("FrameArena: Reset refuses while a task block or a frame is outstanding",
          "[frameallocator][framearena]")
{
    FrameArena arena(64 * 1024);
    TC::Scheduler scheduler(1);
    TC::JoinHandle job = scheduler.Start([] {}, {.allocator = &arena});
    std::optional<Task<int>> frame;
    {
        FrameAllocatorScope scope(arena);
        frame.emplace(Small(1));
    }
    CHECK(arena.Outstanding() == 2);
    CHECK_THROWS_WITH(arena.Reset(), Catch::Contains("2 blocks handed out this frame are still in use"));
    job.Join();
    CHECK_THROWS_WITH(arena.Reset(), Catch::Contains("1 blocks"));
    frame.reset();
    arena.Reset();
    CHECK(arena.Used() == 0);
}

TEST_CASE("FrameArena: a spent buffer throws std::bad_alloc from the coroutine call",
          "[frameallocator][framearena]")
{
    FrameArena arena(256);
    FrameAllocatorScope scope(arena);
    std::vector<Task<int>> tasks;
    CHECK_THROWS_AS(
        [&]
        {
            for (int i = 0; i < 100; ++i)
                tasks.push_back(Small(i));
        }(),
        std::bad_alloc);
    CHECK(arena.Outstanding() == static_cast<long>(tasks.size()));
    tasks.clear();
    arena.Reset();
}

TEST_CASE("stress: a game loop's jobs and their frames from a frame arena, reset every frame",
          "[frameallocator][stress]")
{
    // Each frame: 2 threads make frames in the arena, each destroys the other's; jobs started
    // with the arena make frames in it on the workers. About a million allocations in Release.
    constexpr int kPerThread = 250;
    constexpr std::size_t kJobs = 100;
    const long frames = Scaled(1000);
    FrameArena arena(1 << 20);
    TC::Scheduler scheduler(2);
    std::vector<Task<int>> made[2];
    std::barrier sync(2);
    std::atomic<long> sum{0};
    for (long frame = 0; frame < frames; ++frame)
    {
        auto handles = scheduler.StartBulk(
            kJobs,
            [&](std::size_t i)
            {
                FrameAllocatorScope scope(arena); // ends before the job could wait
                sum.fetch_add(SyncRun(Parent(static_cast<int>(i % 4))));
            },
            {.allocator = &arena});
        auto side = [&](int self)
        {
            {
                FrameAllocatorScope scope(arena);
                for (int i = 0; i < kPerThread; ++i)
                    made[self].push_back(Small(i));
            }
            sync.arrive_and_wait();
            for (Task<int>& task : made[1 - self])
                sum.fetch_add(SyncRun(std::move(task)));
            sync.arrive_and_wait();
            made[1 - self].clear();
        };
        std::thread other(side, 1);
        side(0);
        other.join();
        for (auto& handle : handles)
            handle.Join();
        REQUIRE(arena.Outstanding() == 0);
        arena.Reset();
    }
    const long perFrame = 2 * (kPerThread * (kPerThread + 1) / 2) + (kJobs / 4) * (0 + 1 + 3 + 6);
    CHECK(sum.load() == frames * perFrame);
}
