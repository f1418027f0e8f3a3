// A suspend/resume round trip in steady state allocates nothing: every operator new in this
// binary is counted while a window is open.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "support/MallocDeletes.h"

namespace
{
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
} // namespace

void* operator new(std::size_t size)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size)
{
    return operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size ? size : 1);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept
{
    return operator new(size, tag);
}
// The over-aligned forms are counted too (operator delete frees them all with std::free).
void* operator new(std::size_t size, std::align_val_t alignment)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<std::size_t>(alignment), size ? size : 1) == 0)
        return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t alignment)
{
    return operator new(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    try
    {
        return operator new(size, alignment);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    try
    {
        return operator new(size, alignment);
    }
    catch (...)
    {
        return nullptr;
    }
}
// Every operator delete frees with std::free (support/MallocDeletes.h, included above).

using namespace TC;
using TestSupport::Mailbox;

namespace
{
// Runs `rounds` request/reply round trips between two tasks; counts allocations in the middle.
long CountDuringPingPong(unsigned workers, bool timed)
{
    Mailbox requests, replies;
    Scheduler scheduler(workers);
    const int warmup = 2000;
    const int measured = 20000;
    std::atomic<long> counted{-1};
    auto server = scheduler.Start([&] {
        for (int request; (request = requests.Take()) > 0;)
            replies.Put(request);
    });
    auto client = scheduler.Start([&] {
        for (int i = 1; i <= warmup + measured; ++i)
        {
            if (i == warmup + 1)
            {
                allocations = 0;
                counting = true;
            }
            requests.Put(i);
            int value = 0;
            if (timed)
                (void)replies.Take(value, std::chrono::seconds(10));
            else
                value = replies.Take();
        }
        counting = false;
        counted = allocations.load();
        requests.Put(-1);
    });
    if (workers == 0)
        scheduler.RunUntilIdle();
    client.Join();
    server.Join();
    return counted;
}
} // namespace

TEST_CASE("A suspend/resume round trip between tasks allocates nothing in steady state")
{
    REQUIRE(CountDuringPingPong(1, false) == 0);
    REQUIRE(CountDuringPingPong(0, false) == 0);
}

TEST_CASE("A timed wait resumed early allocates nothing in steady state")
{
    EnableTimers();
    REQUIRE(CountDuringPingPong(1, true) == 0);
}

TEST_CASE("Starting and joining tasks reuses pooled stacks: no allocation in steady state")
{
    Scheduler scheduler(1);
    auto driver = scheduler.Start([&] {
        for (int round = 0; round < 200; ++round)
        {
            if (round == 100)
            {
                allocations = 0;
                counting = true;
            }
            scheduler.Start([] {}).Join();
        }
        counting = false;
    });
    driver.Join();
    REQUIRE(allocations == 0);
}

TEST_CASE("A converted thread's wait allocates nothing")
{
    Mailbox box;
    Scheduler scheduler(1);
    (void)scheduler.Start([&] { box.Put(1); });
    (void)box.Take(); // warm up the thread's state
    allocations = 0;
    counting = true;
    Mailbox second;
    std::atomic<bool> go{false};
    auto task = scheduler.Start([&] {
        while (!go)
            YieldTask();
        second.Put(2);
    });
    counting = false;
    const long beforeWait = allocations;
    counting = true;
    go = true;
    const int value = second.Take();
    counting = false;
    REQUIRE(value == 2);
    REQUIRE(allocations - beforeWait == 0);
    task.Join();
}
