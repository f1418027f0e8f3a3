// Task blocks from an injected IBlockAllocator (TaskOptions::allocator,
// SchedulerOptions::taskAllocator): every block of those starts comes from it and goes back to
// it, with its size and alignment, once the task ended and its JoinHandle let go -- also after
// the Scheduler is gone; a throwing allocator starts nothing and leaks nothing (Start and
// StartBulk); starts without one never call it.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include "support/CountingBlockAllocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace TC;
using TestSupport::CountingBlockAllocator;
using TestSupport::Scaled;

namespace
{
#if defined(__SANITIZE_THREAD__)
constexpr long kTaskFactor = 100; // each task's first switch makes a ThreadSanitizer fiber: slow
#else
constexpr long kTaskFactor = 1;
#endif

struct Bad final : IBlockAllocator
{
    alignas(64) unsigned char buffer[1024];
    bool misaligned = false;
    void* Allocate(std::size_t, std::size_t) override { return misaligned ? buffer + 8 : nullptr; }
    void Free(void*, std::size_t, std::size_t) noexcept override { ++freed; }
    int freed = 0;
};
} // namespace

TEST_CASE("every block of a start with TaskOptions::allocator comes from it and goes back",
          "[blockallocator]")
{
    CountingBlockAllocator allocator;
    Scheduler scheduler(2);
    std::atomic<int> ran{0};
    std::vector<JoinHandle> handles;
    for (int i = 0; i < 100; ++i)
        handles.push_back(scheduler.Start([&] { ran.fetch_add(1); }, {.allocator = &allocator}));
    CHECK(allocator.Allocations() == 100);
    CHECK(allocator.LastAlignment() == 64);
    CHECK(allocator.LastSize() >= 256);
    // A callable larger than the block's room still takes its block from the allocator.
    std::array<char, 512> big{};
    big[0] = 1;
    handles.push_back(scheduler.Start([&, big] { ran.fetch_add(big[0]); }, {.allocator = &allocator}));
    for (auto& handle : handles)
        handle.Join();
    CHECK(ran.load() == 101);
    CHECK(allocator.Frees() == 101);
    CHECK(allocator.Allocations() == 101);
    CHECK(allocator.Mismatches() == 0);
}

TEST_CASE("a detached task's block goes back to its allocator at its end", "[blockallocator]")
{
    CountingBlockAllocator allocator;
    std::atomic<int> ran{0};
    {
        Scheduler scheduler(2);
        for (int i = 0; i < 50; ++i)
            scheduler.Start([&] { ran.fetch_add(1); }, {.allocator = &allocator}).Detach();
        scheduler.StartBulkDetached(50, [&](std::size_t) { ran.fetch_add(1); },
                                    {.allocator = &allocator});
        scheduler.Stop(); // every task ended: each detached block was freed at its end
        CHECK(allocator.Frees() == 100);
    }
    CHECK(ran.load() == 100);
    CHECK(allocator.Allocations() == 100);
    CHECK(allocator.Mismatches() == 0);
}

TEST_CASE("SchedulerOptions::taskAllocator serves every start; TaskOptions::allocator overrides it",
          "[blockallocator]")
{
    CountingBlockAllocator forScheduler;
    CountingBlockAllocator forStart;
    {
        SchedulerOptions options;
        options.workerCount = 2;
        options.taskAllocator = &forScheduler;
        Scheduler scheduler(options);
        std::vector<JoinHandle> handles = scheduler.StartBulk(20, [](std::size_t) {});
        handles.push_back(scheduler.Start([] {}));
        handles.push_back(scheduler.Start(
            [&]
            {
                // Started from a worker: the worker caches are not used either.
                scheduler.Start([] {}).Join();
                scheduler.Start([] {}, {.allocator = &forStart}).Join();
            }));
        for (auto& handle : scheduler.StartBulk(5, [](std::size_t) {}, {.allocator = &forStart}))
            handle.Join();
        for (auto& handle : handles)
            handle.Join();
        CHECK(forScheduler.Allocations() == 23);
        CHECK(forScheduler.Frees() == 23);
        CHECK(forStart.Allocations() == 6);
        CHECK(forStart.Frees() == 6);
    }
    CHECK(forScheduler.Mismatches() == 0);
    CHECK(forStart.Mismatches() == 0);
}

TEST_CASE("starts without an allocator never call one", "[blockallocator]")
{
    CountingBlockAllocator allocator;
    Scheduler scheduler(1);
    scheduler.Start([] {}, {.allocator = &allocator}).Join();
    scheduler.Start([] {}).Join();
    for (auto& handle : scheduler.StartBulk(10, [](std::size_t) {}))
        handle.Join();
    CHECK(allocator.Attempts() == 1);
    CHECK(allocator.Frees() == 1);
}

TEST_CASE("a host-pumped scheduler's blocks come from the allocator too", "[blockallocator]")
{
    CountingBlockAllocator allocator;
    Scheduler host;
    std::vector<JoinHandle> handles;
    for (int i = 0; i < 10; ++i)
        handles.push_back(host.Start([&] { host.Start([] {}, {.allocator = &allocator}).Detach(); },
                                     {.allocator = &allocator}));
    host.RunUntilIdle();
    for (auto& handle : handles)
        handle.Join();
    CHECK(allocator.Allocations() == 20);
    CHECK(allocator.Frees() == 20);
}

TEST_CASE("a block a JoinHandle holds outlives its Scheduler and goes back to the allocator then",
          "[blockallocator]")
{
    CountingBlockAllocator allocator;
    std::optional<JoinHandle> joined;
    std::optional<JoinHandle> dropped;
    std::optional<JoinHandle> failed;
    {
        Scheduler scheduler(2);
        joined.emplace(scheduler.Start([] {}, {.allocator = &allocator}));
        dropped.emplace(scheduler.Start([] {}, {.allocator = &allocator}));
        failed.emplace(scheduler.Start([] { throw std::runtime_error("late"); },
                                       {.allocator = &allocator}));
    }
    CHECK(allocator.Allocations() == 3);
    CHECK(allocator.Frees() == 0); // the handles hold their blocks
    CHECK(joined->IsFinished());
    joined->Join();
    CHECK(allocator.Frees() == 1);
    dropped.reset();
    CHECK(allocator.Frees() == 2);
    CHECK_THROWS_WITH(failed->Join(), "late");
    CHECK(allocator.Frees() == 3);
    CHECK(allocator.Mismatches() == 0);
}

TEST_CASE("a throwing allocator: Start throws, starts nothing and leaks nothing", "[blockallocator]")
{
    CountingBlockAllocator allocator;
    allocator.failOn = 0;
    Scheduler scheduler(2);
    auto token = std::make_shared<int>(0);
    bool ran = false;
    CHECK_THROWS_AS(scheduler.Start([token, &ran] { ran = true; }, {.allocator = &allocator}),
                    std::bad_alloc);
    CHECK(token.use_count() == 1); // the callable was never copied into a task
    CHECK(scheduler.LiveTasks() == 0);
    scheduler.Stop();
    CHECK_FALSE(ran);
    CHECK(allocator.Allocations() == 0);
    CHECK(allocator.Frees() == 0);
}

TEST_CASE("a throwing allocator midway through StartBulk: nothing started, every block back",
          "[blockallocator]")
{
    Scheduler scheduler(2);
    std::atomic<int> ran{0};
    for (bool detached : {false, true})
        for (long failOn : {0L, 3L, 9L})
        {
            CountingBlockAllocator bulk;
            bulk.failOn = failOn;
            const TaskOptions options{.allocator = &bulk};
            auto body = [&](std::size_t) { ran.fetch_add(1); };
            if (detached)
                CHECK_THROWS_AS(scheduler.StartBulkDetached(10, body, options), std::bad_alloc);
            else
                CHECK_THROWS_AS(scheduler.StartBulk(10, body, options), std::bad_alloc);
            CHECK(bulk.Allocations() == failOn);
            CHECK(bulk.Frees() == failOn);
            CHECK(bulk.Mismatches() == 0);
        }
    scheduler.Stop();
    CHECK(ran.load() == 0);
    CHECK(scheduler.LiveTasks() == 0);
}

TEST_CASE("an allocator that returns nullptr or a misaligned block is refused by name",
          "[blockallocator]")
{
    Bad bad;
    Scheduler scheduler(1);
    CHECK_THROWS_WITH(scheduler.Start([] {}, {.allocator = &bad}),
                      Catch::Contains("returned nullptr"));
    bad.misaligned = true;
    CHECK_THROWS_WITH(scheduler.Start([] {}, {.allocator = &bad}),
                      Catch::Contains("below the alignment"));
    CHECK(bad.freed == 1); // the misaligned block went back
    CHECK(scheduler.LiveTasks() == 0);
}

TEST_CASE("stress: a million task blocks through an allocator, joined and detached",
          "[blockallocator][stress]")
{
    CountingBlockAllocator allocator;
    const long total = std::max(Scaled(1000000) / kTaskFactor, 500L);
    std::atomic<long> ran{0};
    {
        Scheduler scheduler(2);
        constexpr long kSlice = 1000;
        for (long started = 0; started < total; started += kSlice)
        {
            const auto count = static_cast<std::size_t>(std::min(kSlice, total - started));
            if ((started / kSlice) % 2 == 0)
            {
                for (auto& handle :
                     scheduler.StartBulk(count, [&](std::size_t) { ran.fetch_add(1); },
                                         {.allocator = &allocator}))
                    handle.Detach(); // may run before or after the task's end
            }
            else
            {
                std::vector<JoinHandle> handles;
                handles.reserve(count);
                for (std::size_t i = 0; i < count; ++i)
                    handles.push_back(scheduler.Start([&] { ran.fetch_add(1); },
                                                      {.allocator = &allocator}));
                for (auto& handle : handles)
                    handle.Join();
            }
        }
    }
    CHECK(ran.load() == total);
    CHECK(allocator.Allocations() == total);
    CHECK(allocator.Frees() == total);
    CHECK(allocator.Mismatches() == 0);
}

TEST_CASE("DefaultBlockAllocator: the heap, with the alignment asked for", "[blockallocator]")
{
    IBlockAllocator& heap = DefaultBlockAllocator();
    CHECK(&heap == &DefaultBlockAllocator());
    for (std::size_t alignment : {16u, 64u, 256u})
    {
        void* block = heap.Allocate(100, alignment);
        CHECK(reinterpret_cast<std::uintptr_t>(block) % alignment == 0);
        heap.Free(block, 100, alignment);
    }
    Scheduler scheduler(1);
    int ran = 0;
    scheduler.Start([&] { ++ran; }, {.allocator = &heap}).Join();
    CHECK(ran == 1);
}
