// Injectable stack allocator and stack size classes, and each idle policy: a host that manages
// its own memory sees every stack come from its allocator and go back to it, at the sizes asked.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include "kernel/TestGate.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
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
    // Asked through Allocate (the allocator does not make the guard itself): the guard region
    // comes on top of each stack's size.
    const std::size_t guardBytes = guard == TC::StackGuard::Page ? TC::kDefaultStackGuardBytes : 0;
    const std::size_t small = (TC::StackSize::Small + Page() - 1) / Page() * Page();
    CHECK(allocator.allocatedBySize[small + guardBytes] >= 1);
    CHECK(allocator.allocatedBySize[TC::StackSize::Medium + guardBytes] == 1);
    CHECK(allocator.allocatedBySize[TC::StackSize::Large + guardBytes] == 1);
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

namespace
{
// Resident memory of this process, from /proc/self/statm (its second field, in pages). Read
// with open/read into a buffer on the stack: the measurement itself must not allocate (under
// AddressSanitizer each freed block sits in its quarantine, and would grow the resident size).
long ResidentBytes()
{
    const int file = open("/proc/self/statm", O_RDONLY);
    if (file < 0)
        return -1;
    char text[128] = {};
    const ssize_t length = read(file, text, sizeof text - 1);
    close(file);
    if (length <= 0)
        return -1;
    long size = 0;
    long resident = -1;
    if (std::sscanf(text, "%ld %ld", &size, &resident) != 2 || resident < 0)
        return -1;
    return resident * static_cast<long>(Page());
}

// Counts the stacks handed out, by whichever member the scheduler calls.
class AllocationCounter final : public TC::IStackAllocator
{
public:
    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        ++allocated;
        return TC::DefaultStackAllocator().Allocate(size, guard);
    }
    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        ++released;
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
    }
    std::atomic<long> allocated{0};
    std::atomic<long> released{0};
};
} // namespace

TEST_CASE("a game loop whose jobs move to the host and end there allocates no stack in steady "
          "state, and its resident memory stays flat",
          "[stacks]")
{
    // The game-loop sample's shape: a host scheduler pumped by this thread, a two-worker
    // scheduler with stacks of another size, and each frame a host task that fans jobs out to the
    // workers; every job moves to the host (MoveCurrentTaskTo) to apply its result and ends
    // there, after waiting on the host for the frame's other jobs. Every stack goes back to the scheduler that
    // took it, so after a warm-up the pools serve every frame: no stack is allocated and the
    // resident memory does not grow. (Before, each job's stack stayed in the host's pool,
    // where no host task of that size would take it, and the workers allocated anew every frame:
    // about 2 MB more resident every 60 frames.)
    constexpr int kFrames = 1800;
    constexpr int kWarmUp = 60;
    constexpr int kJobs = 8;
    AllocationCounter stacks; // outlives both schedulers
    TC::SchedulerOptions hostOptions;
    hostOptions.name = "main";
    hostOptions.stackAllocator = &stacks;
    hostOptions.stackSize = TC::StackSize::Medium;
    TC::SchedulerOptions workerOptions;
    workerOptions.name = "jobs";
    workerOptions.workerCount = 2;
    workerOptions.stackAllocator = &stacks;
    workerOptions.stackSize = TC::StackSize::Small;
    long allocatedAtWarmUp = 0;
    long residentAtWarmUp = 0;
    long residentMost = 0;
    int lastAllocatingFrame = -1;
    long applied = 0;
    long arrived = 0; // jobs arrived on the host, all frames
    TestSupport::Gate gate; // where they wait for the frame's last
    int wrongResults = 0; // checked once: an assertion per frame would grow Catch's memory
    {
        TC::Scheduler host(hostOptions);
        TC::Scheduler workers(workerOptions);
        std::array<long, kJobs> results{};
        for (int frame = 0; frame < kFrames; ++frame)
        {
            const long before = stacks.allocated.load();
            bool done = false;
            host.Start(
                    [&workers, &host, &results, &applied, &arrived, &gate, &done, frame]
                    {
                        std::array<TC::JoinHandle, kJobs> jobs;
                        for (int i = 0; i < kJobs; ++i)
                            jobs[static_cast<std::size_t>(i)] = workers.Start(
                                [&host, &results, &applied, &arrived, &gate, frame, i]
                                {
                                    const long value = UseStack(2048) + frame + i; // on a worker
                                    TC::MoveCurrentTaskTo(host, TC::Priority::High);
                                    // On the host (no lock): every job of the frame holds its
                                    // stack until all have arrived, so each frame needs as many
                                    // stacks as the first, however the workers interleave.
                                    if (++arrived < kJobs * (frame + 1))
                                        TC::SuspendTask(&gate);
                                    else
                                        gate.OpenAll();
                                    results[static_cast<std::size_t>(i)] = value;
                                    ++applied;
                                },
                                {.name = "job", .priority = TC::Priority::High});
                        for (TC::JoinHandle& job : jobs)
                            job.Join();
                        done = true;
                    },
                    {.name = "frame", .priority = TC::Priority::High})
                .Detach();
            while (!done)
                if (host.RunFor(std::chrono::microseconds(500)).ran == 0)
                    host.WaitForWork(std::chrono::milliseconds(1));
            host.RunUntilIdle(); // the frame task's end
            for (int i = 0; i < kJobs; ++i)
                wrongResults += results[static_cast<std::size_t>(i)] == 1 + frame + i ? 0 : 1;
            if (stacks.allocated.load() != before)
                lastAllocatingFrame = frame;
            if (frame == kWarmUp)
            {
                allocatedAtWarmUp = stacks.allocated.load();
                residentAtWarmUp = ResidentBytes();
                residentMost = residentAtWarmUp;
            }
            else if (frame > kWarmUp)
                residentMost = std::max(residentMost, ResidentBytes());
        }
        INFO("stacks allocated by frame " << kWarmUp << ": " << allocatedAtWarmUp << ", in all: "
                                          << stacks.allocated.load() << ", the last in frame "
                                          << lastAllocatingFrame);
        CHECK(applied == static_cast<long>(kFrames) * kJobs);
        CHECK(wrongResults == 0);
        CHECK(stacks.allocated.load() == allocatedAtWarmUp);
        CHECK(lastAllocatingFrame <= kWarmUp);
        INFO("resident at frame " << kWarmUp << ": " << residentAtWarmUp / 1024 << " KiB, most after: "
                                  << residentMost / 1024 << " KiB");
        REQUIRE(residentAtWarmUp > 0);
        // ThreadSanitizer's own bookkeeping grows with every fiber it has seen (each task context
        // is one): about 1 MB over these frames, so its bound is looser -- still far below the
        // megabytes a stack per frame would add.
#if defined(__SANITIZE_THREAD__)
        constexpr long kResidentBound = 4 * 1024 * 1024;
#else
        constexpr long kResidentBound = 1024 * 1024;
#endif
        CHECK(residentMost - residentAtWarmUp <= kResidentBound);
    }
    CHECK(stacks.released.load() == stacks.allocated.load());
}

TEST_CASE("a moved task's stack goes back to its allocator when the scheduler that took it is "
          "gone, and that scheduler does not wait for it",
          "[stacks]")
{
    AllocationCounter stacks;
    TC::SchedulerOptions hostOptions;
    hostOptions.stackAllocator = &stacks;
    TC::Scheduler host(hostOptions);
    bool arrived = false; // both written on the host, which this thread pumps
    bool ended = false;
    TC::JoinHandle mover;
    {
        TC::SchedulerOptions workerOptions;
        workerOptions.workerCount = 1;
        workerOptions.stackAllocator = &stacks;
        workerOptions.stackSize = TC::StackSize::Small;
        TC::Scheduler workers(workerOptions);
        mover = workers.Start(
            [&]
            {
                TC::MoveCurrentTaskTo(host);
                arrived = true;
                TC::YieldTask(); // still on the host, after its scheduler is gone
                ended = true;
            });
        while (!arrived)
        {
            host.RunPending(1);
            std::this_thread::yield();
        }
    } // the workers' scheduler is destroyed while its task's stack is on the host
    CHECK_FALSE(ended);
    const long releasedBefore = stacks.released.load();
    host.RunUntilIdle();
    mover.Join();
    CHECK(ended);
    CHECK(stacks.released.load() == releasedBefore + 1); // freed, not pooled by the host
    CHECK(stacks.allocated.load() == stacks.released.load());
}
