// Injectable stack allocator and stack size classes, and each idle policy: a host that manages
// its own memory sees every stack come from its allocator and go back to it, at the sizes asked.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <unistd.h>
#include <vector>

using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::Promise;

namespace
{
// Hands out the default allocator's stacks and counts them by size; can be told to fail.
class CountingStackAllocator final : public TC::IStackAllocator
{
public:
    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        if (fail.load())
            throw std::bad_alloc();
        void* base = TC::DefaultStackAllocator().Allocate(size, guard);
        std::lock_guard lock(lock_);
        ++allocatedBySize[size];
        ++live;
        guards.push_back(guard);
        return base;
    }

    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
        std::lock_guard lock(lock_);
        ++releasedBySize[size];
        --live;
    }

    std::atomic<bool> fail{false};
    std::map<std::size_t, int> allocatedBySize, releasedBySize;
    std::vector<TC::StackGuard> guards;
    int live = 0;

private:
    std::mutex lock_;
};

std::size_t Page()
{
    return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Touches about `bytes` of the calling task's stack, so a too-small stack would fault.
[[gnu::noinline]] int UseStack(std::size_t bytes)
{
    volatile unsigned char block[4096];
    std::memset(const_cast<unsigned char*>(block), 1, sizeof block);
    if (bytes <= sizeof block)
        return block[0];
    return UseStack(bytes - sizeof block) + block[100];
}
} // namespace

TEST_CASE("a custom IStackAllocator provides and takes back every stack", "[stacks]")
{
    CountingStackAllocator allocator; // outlives the schedulers
    const TC::StackGuard guard = GENERATE(TC::StackGuard::Page, TC::StackGuard::None);
    {
        TC::SchedulerOptions options;
        options.workerCount = 2;
        options.stackAllocator = &allocator;
        options.stackSize = TC::StackSize::Small;
        options.stackGuard = guard;
        TC::Scheduler workers(options);

        std::atomic<int> failures{0};
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 8; ++i)
            tasks.push_back(workers.Start(
                [&failures]
                {
                    if (UseStack(8 * 1024) != 2)
                        ++failures;
                }));
        tasks.push_back(workers.Start(
            [&failures]
            {
                if (UseStack(48 * 1024) != 12)
                    ++failures;
            },
            {.stackSize = TC::StackSize::Medium}));
        tasks.push_back(workers.Start(
            [&failures]
            {
                if (UseStack(200 * 1024) != 50)
                    ++failures;
            },
            {.stackSize = TC::StackSize::Large}));
        for (auto& task : tasks)
            task.Join();
        CHECK(failures == 0);
        // Stacks are pooled: however many tasks start, the stacks alive stay bounded by what is
        // in use plus the pools (each worker caches up to 64 stacks released on it, the rest go
        // to a shared pool that Start takes from). A new stack is allocated only when the shared
        // pool is empty, so the most alive at once is: both caches full, the Medium and Large
        // stacks pooled above, on each worker one task that Join already saw finish but that has
        // not yet switched away and released its stack (a worker preempted there under load),
        // and the task being started.
        for (int round = 0; round < 600; ++round)
            workers.Start([] { UseStack(1024); }).Join();
        CHECK(allocator.live <= 2 * 64 + 2 + 2 + 1);
    }
    CHECK(allocator.live == 0);
    const std::size_t small = (TC::StackSize::Small + Page() - 1) / Page() * Page();
    CHECK(allocator.allocatedBySize[small] >= 1);
    CHECK(allocator.allocatedBySize[TC::StackSize::Medium] == 1);
    CHECK(allocator.allocatedBySize[TC::StackSize::Large] == 1);
    CHECK(allocator.allocatedBySize == allocator.releasedBySize);
    for (TC::StackGuard seen : allocator.guards)
        CHECK(seen == guard);
}

TEST_CASE("a failing stack allocation ends that task unrun, and Join says why", "[stacks]")
{
    CountingStackAllocator allocator;
    TC::SchedulerOptions options;
    options.stackAllocator = &allocator;
    TC::Scheduler host(options);
    allocator.fail = true;
    bool ran = false;
    auto handle = host.Start([&ran] { ran = true; }); // the stack is taken when it first runs
    CHECK(host.LiveTasks() == 1);
    host.RunUntilIdle();
    CHECK_FALSE(ran);
    CHECK(host.LiveTasks() == 0);
    CHECK_THROWS_AS(handle.Join(), std::bad_alloc);
    // A callable too large for the task block needs its stack at Start, which throws.
    std::array<char, 512> large{};
    CHECK_THROWS_AS(host.Start([&ran, large] { ran = large[0] == 0; }), std::bad_alloc);
    CHECK(host.LiveTasks() == 0);
    allocator.fail = false;
    host.Start([&ran] { ran = true; }).Detach();
    host.RunUntilIdle();
    CHECK(ran);
}

TEST_CASE("every idle policy runs and wakes its workers", "[idle]")
{
    const TC::IdlePolicy policy = GENERATE(TC::IdlePolicy::SpinThenSleep, TC::IdlePolicy::Spin,
                                           TC::IdlePolicy::Yield, TC::IdlePolicy::Sleep);
    TC::SchedulerOptions options;
    options.workerCount = 2;
    options.idlePolicy = policy;
    TC::Scheduler workers(options);
    constexpr int kRounds = 200;
    std::atomic<int> failures{0};
    for (int round = 0; round < kRounds; ++round)
    {
        auto [future, promise] = MakeFuture<int>();
        auto waiter = workers.Start(
            [f = std::move(future), round, &failures]() mutable
            {
                if (f.Wait() != round)
                    ++failures;
            });
        if (round % 50 == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1)); // let the workers idle
        promise.SetValue(round);
        waiter.Join();
    }
    CHECK(failures == 0);
}

TEST_CASE("a pooled stack is reused by the next task", "[stacks]")
{
    // Under AddressSanitizer this also proves the reused stack carries no poisoned frames of the
    // task that ran on it before (a finished task never returns from its entry function).
    CountingStackAllocator allocator;
    TC::SchedulerOptions options;
    options.workerCount = 1;
    options.stackAllocator = &allocator;
    TC::Scheduler workers(options);
    int sum = 0;
    // Started and joined from a task on the worker, so each child takes the stack the previous
    // one released there.
    workers
        .Start(
            [&]
            {
                for (int i = 0; i < 20; ++i)
                    workers.Start([&sum, i] { sum += i + UseStack(16 * 1024); }).Join();
            })
        .Join();
    CHECK(sum == 190 + 20 * 4);
    CHECK(allocator.live == 2); // the parent's stack and one reused child stack
}
