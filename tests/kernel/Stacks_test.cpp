// Stacks: pooled, guard page below, size per scheduler and per task; 100 000 suspended tasks;
// an overflow caught by the guard page (in a child process).

#include "TestGate.h"
#include "TestMailbox.h"
#include "TestStackAllocator.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <utility>
#include <unistd.h>
#include <vector>

using namespace TC;
using TestSupport::Gate;
using CountingStacks = TestSupport::CountingStackAllocator;

namespace
{
[[gnu::noinline]] int Recurse(volatile char* previous, int depth)
{
    volatile char frame[1024];
    std::memset(const_cast<char*>(frame), depth & 0xff, sizeof frame);
    frame[0] = previous ? previous[0] : 0;
    return depth > 0 ? Recurse(frame, depth + 1) + frame[1] : 0;
}

[[gnu::noinline]] std::uintptr_t HereOnTheStack()
{
    return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}
long ResidentKilobytes()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}
} // namespace

TEST_CASE("100 000 tasks suspended at once, all resumed and joined")
{
    // ThreadSanitizer counts every fiber as a thread and stops at 8128, so its build proves the
    // same property at 6000; every other build runs the full 100 000.
#if defined(__SANITIZE_THREAD__)
    const int count = 6000;
#else
    const int count = 100000;
#endif
    SchedulerOptions options;
    options.workerCount = 2;
    options.stackSize = StackSize::Small;
    options.stackGuard = StackGuard::None; // vm.max_map_count allows ~32k guarded stacks
    Scheduler scheduler(options);
    Gate gate;
    std::atomic<int> finished{0};
    std::vector<JoinHandle> tasks;
    tasks.reserve(count);
    const long before = ResidentKilobytes();
    for (int i = 0; i < count; ++i)
        tasks.push_back(scheduler.Start([&] {
            SuspendTask(&gate);
            ++finished;
        }));
    while (gate.suspended < count)
        std::this_thread::yield();
    REQUIRE(scheduler.LiveTasks() == static_cast<std::size_t>(count));
    const long during = ResidentKilobytes();
    INFO("resident growth for " << count << " suspended tasks: " << (during - before) << " KiB");
    REQUIRE(gate.OpenAll() == count);
    for (auto& task : tasks)
        task.Join();
    REQUIRE(finished == count);
    REQUIRE(scheduler.LiveTasks() == 0);
}

TEST_CASE("A stack overflow hits the guard page (death test in a child process)")
{
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
    {
        // Quiet the sanitizers' report; the child's death is the assertion.
        close(STDERR_FILENO);
        for (int signalNumber : {SIGABRT, SIGSEGV, SIGBUS})
            std::signal(signalNumber, SIG_DFL);
        SchedulerOptions options;
        options.workerCount = 1;
        options.stackSize = StackSize::Small;
        Scheduler scheduler(options);
        scheduler.Start([] { Recurse(nullptr, 1); }).Join();
        _exit(0); // reached only if the overflow went unnoticed
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    INFO("child status " << status);
    const bool signalled = WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
    const bool sanitizerExit = WIFEXITED(status) && WEXITSTATUS(status) != 0; // ASan reports, exits 1
    REQUIRE((signalled || sanitizerExit));
}

TEST_CASE("Per-task stack sizes: a deep recursion fits in a large stack")
{
    Scheduler scheduler(1); // default 64 KiB stacks
    std::atomic<bool> done{false};
    scheduler
        .Start(
            [&] {
                volatile char big[512 * 1024];
                std::memset(const_cast<char*>(big), 1, sizeof big);
                done = big[12345] == 1;
            },
            {.name = "big", .stackSize = 1024 * 1024})
        .Join();
    REQUIRE(done);
}

TEST_CASE("A callable too large for its stack is refused with an exception")
{
    Scheduler scheduler(1);
    struct Huge
    {
        char bytes[128 * 1024];
        void operator()() const {}
    };
    auto huge = std::make_unique<Huge>();
    REQUIRE_THROWS_AS(scheduler.Start(*huge, {.stackSize = StackSize::Small}), std::length_error);
    REQUIRE(scheduler.LiveTasks() == 0);
}

TEST_CASE("A custom stack allocator is used and every stack is given back")
{
    CountingStacks counting;
    {
        SchedulerOptions options;
        options.workerCount = 2;
        options.stackAllocator = &counting;
        Scheduler scheduler(options);
        for (int round = 0; round < 10; ++round)
        {
            std::vector<JoinHandle> tasks;
            for (int i = 0; i < 50; ++i)
                tasks.push_back(scheduler.Start([] {}));
            for (auto& task : tasks)
                task.Join();
        }
        // Pooled: at most the 50 in flight, the two workers' caches (16 each) and a few in transit.
        REQUIRE(counting.allocated <= 150);
    }
    REQUIRE(counting.released == counting.allocated);
}

TEST_CASE("A task that has never run starts on the stack of the task that ended before it")
{
    CountingStacks counting;
    constexpr int kChildren = 100;
    std::vector<std::uintptr_t> where(kChildren);
    std::vector<TaskHandle> who(kChildren);
    std::atomic<int> entered{0};
    std::atomic<int> left{0};
    std::vector<std::string> order;
    {
        SchedulerOptions options;
        options.workerCount = 1;
        options.stackAllocator = &counting;
        options.hooks.taskEnter = [&](TaskHandle, const char* name)
        {
            ++entered;
            order.push_back(std::string("enter ") + name);
        };
        options.hooks.taskLeave = [&](TaskHandle, const char* name)
        {
            ++left;
            order.push_back(std::string("leave ") + name);
        };
        Scheduler scheduler(options);
        scheduler
            .Start(
                [&]
                {
                    std::vector<JoinHandle> children;
                    for (int i = 0; i < kChildren; ++i)
                        children.push_back(scheduler.Start(
                            [&, i]
                            {
                                where[static_cast<std::size_t>(i)] = HereOnTheStack();
                                who[static_cast<std::size_t>(i)] = GetCurrentTask();
                                if (i == 1)
                                    throw std::runtime_error("child 1");
                            },
                            {.name = "child"}));
                    for (int i = 0; i < kChildren; ++i)
                    {
                        if (i == 1)
                            REQUIRE_THROWS_WITH(children[1].Join(), "child 1");
                        else
                            children[static_cast<std::size_t>(i)].Join();
                    }
                },
                {.name = "driver"})
            .Join();
    }
    // The driver's stack, and one that every child ran on in turn (without the hand-over: two
    // alternating, since a task takes its stack before the one it follows gives its stack back).
    REQUIRE(counting.allocated == 2);
    REQUIRE(counting.released == counting.allocated);
    const auto [lowest, highest] = std::minmax_element(where.begin(), where.end());
    REQUIRE(*highest - *lowest < StackSize::Medium);
    for (int i = 1; i < kChildren; ++i)
        REQUIRE(who[static_cast<std::size_t>(i)] != who[static_cast<std::size_t>(i - 1)]);
    // Matched pairs, each child's leave before the next child's enter.
    REQUIRE(entered == left);
    REQUIRE(entered == kChildren + 2); // the driver runs again after its first Join
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
        if (order[i].starts_with("enter child"))
            REQUIRE(order[i + 1] == "leave child");
}

TEST_CASE("A task that wants another stack size does not start on the one that ended")
{
    CountingStacks counting;
    std::atomic<int> done{0};
    {
        SchedulerOptions options;
        options.workerCount = 1;
        options.stackAllocator = &counting;
        Scheduler scheduler(options);
        scheduler
            .Start(
                [&]
                {
                    auto small = [&] { ++done; };
                    auto big = [&]
                    {
                        // Far past the default stack: on the one before it, this hits its guard page.
                        volatile char bytes[512 * 1024];
                        std::memset(const_cast<char*>(bytes), 1, sizeof bytes);
                        done += bytes[4321];
                    };
                    JoinHandle first = scheduler.Start(small);
                    JoinHandle second = scheduler.Start(big, {.stackSize = 1024 * 1024});
                    JoinHandle third = scheduler.Start(small);
                    first.Join();
                    second.Join();
                    third.Join();
                })
            .Join();
    }
    REQUIRE(done == 3);
    // The driver's, the first task's (which the third one takes from the pool) and the large one.
    REQUIRE(counting.allocated == 3);
    REQUIRE(counting.released == counting.allocated);
}

TEST_CASE("A task started on a finished task's stack can suspend and resume elsewhere")
{
    Scheduler scheduler(2);
    Gate gate;
    std::atomic<int> resumed{0};
    constexpr int kTasks = 200;
    std::vector<JoinHandle> tasks;
    scheduler
        .Start(
            [&]
            {
                for (int i = 0; i < kTasks; ++i)
                    tasks.push_back(scheduler.Start(
                        [&, i]
                        {
                            if (i % 2 == 0)
                                return; // the odd one after it starts on this stack
                            SuspendTask(&gate);
                            ++resumed;
                        }));
            })
        .Join();
    while (resumed.load() < kTasks / 2)
    {
        gate.OpenAll();
        std::this_thread::yield();
    }
    for (JoinHandle& task : tasks)
        task.Join();
    REQUIRE(resumed == kTasks / 2);
    REQUIRE(gate.suspended == kTasks / 2);
}

TEST_CASE("Tasks that move to another scheduler and end there hand their stacks on correctly")
{
    // A task started on `from` moves to `to` and ends there, where fresh tasks keep arriving:
    // the stack it brought (from the shared allocator) goes on to one of them or back to `to`'s
    // pool. Every stack is given back exactly once, and both schedulers count zero at the end.
    CountingStacks counting;
    // Capped: a mover holds its guarded stack (two mappings) until it ends, and all of them may
    // be alive at once; 20 000 stay clear of Linux's default 65 530 mappings per process.
    const int moved = static_cast<int>(std::min(TestSupport::Scaled(4000), 20000L));
    std::atomic<int> arrived{0};
    std::atomic<int> fresh{0};
    {
        SchedulerOptions options;
        options.workerCount = 1;
        options.stackAllocator = &counting;
        Scheduler from(options);
        Scheduler to(options);
        std::vector<JoinHandle> movers;
        for (int i = 0; i < moved; ++i)
            movers.push_back(from.Start(
                [&]
                {
                    MoveCurrentTaskTo(to);
                    REQUIRE(Scheduler::Current() == &to);
                    ++arrived;
                }));
        JoinHandle driver = to.Start(
            [&]
            {
                std::vector<JoinHandle> children;
                for (int i = 0; i < moved; ++i)
                {
                    children.push_back(to.Start([&] { ++fresh; }));
                    if (i % 8 == 0)
                        YieldTask(); // let the movers in between
                }
                for (JoinHandle& child : children)
                    child.Join();
            });
        for (JoinHandle& mover : movers)
            mover.Join();
        driver.Join();
        REQUIRE(from.LiveTasks() == 0);
        REQUIRE(to.LiveTasks() == 0);
    }
    REQUIRE(arrived == moved);
    REQUIRE(fresh == moved);
    REQUIRE(counting.released == counting.allocated);
}

namespace
{
// The default allocator, remembering the guard each live stack was made with.
struct GuardRecordingStacks final : IStackAllocator
{
    struct Record
    {
        std::uintptr_t base;
        std::size_t size;
        StackGuard guard;
    };
    std::mutex lock;
    std::vector<Record> live;
    void* Allocate(std::size_t size, StackGuard guard) override
    {
        void* base = DefaultStackAllocator().Allocate(size, guard);
        std::lock_guard hold(lock);
        live.push_back({reinterpret_cast<std::uintptr_t>(base), size, guard});
        return base;
    }
    void Deallocate(void* base, std::size_t size, StackGuard guard) noexcept override
    {
        {
            std::lock_guard hold(lock);
            std::erase_if(live, [&](const Record& record)
                          { return record.base == reinterpret_cast<std::uintptr_t>(base); });
        }
        DefaultStackAllocator().Deallocate(base, size, guard);
    }
    // The guard of the live stack holding `address`.
    StackGuard GuardAt(std::uintptr_t address)
    {
        std::lock_guard hold(lock);
        for (const Record& record : live)
            if (address >= record.base && address < record.base + record.size)
                return record.guard;
        FAIL("the address is on no stack of this allocator");
        return StackGuard::None;
    }
};
} // namespace

TEST_CASE("A stack brought by a moved task never serves a scheduler that wants another guard")
{
    // Before: the task's unguarded stack went into the target's pool on its end, and the
    // target's next task ran on it without the guard page its scheduler promised.
    GuardRecordingStacks stacks;
    SchedulerOptions toOptions;
    toOptions.stackAllocator = &stacks;
    toOptions.stackGuard = StackGuard::Page;
    Scheduler to(toOptions);
    SchedulerOptions fromOptions = toOptions;
    fromOptions.stackGuard = StackGuard::None;
    Scheduler from(fromOptions);
    JoinHandle mover = from.Start([&] { MoveCurrentTaskTo(to); });
    from.RunUntilIdle(); // it moves
    to.RunUntilIdle();   // and ends on `to`
    mover.Join();
    StackGuard seen = StackGuard::None;
    JoinHandle next = to.Start([&] { seen = stacks.GuardAt(HereOnTheStack()); });
    to.RunUntilIdle();
    next.Join();
    REQUIRE(seen == StackGuard::Page);
}

TEST_CASE("A scheduler's allocator has every stack back once that scheduler is destroyed, even one "
          "a moved task ended with elsewhere")
{
    // Before: the stack went into the target's pool, and the target gave it back to the first
    // scheduler's allocator in its own destructor -- an allocator that need only outlive the
    // scheduler it was given to.
    CountingStacks toStacks;
    SchedulerOptions toOptions;
    toOptions.stackAllocator = &toStacks;
    Scheduler to(toOptions);
    CountingStacks fromStacks;
    {
        SchedulerOptions fromOptions;
        fromOptions.stackAllocator = &fromStacks;
        Scheduler from(fromOptions);
        JoinHandle mover = from.Start([&] { MoveCurrentTaskTo(to); });
        from.RunUntilIdle();
        to.RunUntilIdle();
        mover.Join();
        JoinHandle next = to.Start([] {});
        to.RunUntilIdle();
        next.Join();
    }
    REQUIRE(fromStacks.allocated >= 1);
    REQUIRE(fromStacks.released == fromStacks.allocated);
}

namespace
{
// Starts `count` tasks on `scheduler` that all suspend on one gate (so each holds a stack at
// once), then resumes and joins them all; `pump` runs a host-pumped scheduler's work.
void SuspendAllThenFinish(Scheduler& scheduler, int count, TaskOptions taskOptions, bool pump)
{
    Gate gate;
    std::vector<JoinHandle> tasks;
    for (int i = 0; i < count; ++i)
        tasks.push_back(scheduler.Start([&] { SuspendTask(&gate); }, taskOptions));
    while (gate.suspended < count)
        pump ? (void)scheduler.RunUntilIdle() : std::this_thread::yield();
    REQUIRE(gate.OpenAll() == count);
    if (pump)
        scheduler.RunUntilIdle();
    for (auto& task : tasks)
        task.Join();
}
} // namespace

TEST_CASE("The stack pool keeps no more than SchedulerOptions::stackPoolBytes")
{
    // Before the budget a burst's stacks all stayed pooled until ~Scheduler: 500 here.
    constexpr int kBurst = 500;
    constexpr std::size_t kStack = 16 * 1024; // StackSize::Small, a whole number of pages
    CountingStacks counting;
    SECTION("default-size stacks, two workers: the pool's budget plus the workers' caches")
    {
        SchedulerOptions options;
        options.workerCount = 2;
        options.stackSize = kStack;
        options.stackAllocator = &counting;
        options.stackPoolBytes = 8 * kStack;
        Scheduler scheduler(options);
        SuspendAllThenFinish(scheduler, kBurst, {}, false);
        const int cachedAtMost = 2 * 64; // each worker keeps up to 64 of its own
        CHECK(counting.allocated == kBurst);
        CHECK(counting.allocated - counting.released <= cachedAtMost + 8);
        const std::size_t trimmed = scheduler.TrimStackPool();
        CHECK(trimmed <= 8 * kStack);
        CHECK(trimmed % kStack == 0);
        CHECK(counting.allocated - counting.released <= cachedAtMost);
    }
    SECTION("stacks of a per-task size (no worker caches them), a budget of 0: none pooled")
    {
        SchedulerOptions options;
        options.stackAllocator = &counting;
        options.stackPoolBytes = 0;
        Scheduler scheduler(options);
        TaskOptions big;
        big.stackSize = 2 * kStack;
        SuspendAllThenFinish(scheduler, kBurst, big, true);
        CHECK(counting.allocated == kBurst);
        CHECK(counting.released == kBurst);
        CHECK(scheduler.TrimStackPool() == 0);
    }
    SECTION("an unlimited pool keeps the burst's stacks until TrimStackPool gives them back")
    {
        SchedulerOptions options;
        options.stackAllocator = &counting;
        options.stackPoolBytes = SIZE_MAX;
        Scheduler scheduler(options);
        TaskOptions big;
        big.stackSize = 2 * kStack;
        SuspendAllThenFinish(scheduler, kBurst, big, true);
        CHECK(counting.released == 0);
        CHECK(scheduler.TrimStackPool() == kBurst * 2 * kStack);
        CHECK(counting.released == kBurst);
        // The pool refills after a trim: the next burst reuses what it released.
        SuspendAllThenFinish(scheduler, 10, big, true);
        CHECK(counting.allocated == kBurst + 10);
        SuspendAllThenFinish(scheduler, 10, big, true);
        CHECK(counting.allocated == kBurst + 10);
    }
    CHECK(counting.released == counting.allocated);
}

TEST_CASE("TrimStackPool from another thread while tasks start, suspend and end loses no stack")
{
    // Trims race the workers' batch hand-offs to the pool and their refills from it; every stack
    // must end up either in use, cached, pooled or given back -- once.
    CountingStacks counting;
    std::atomic<bool> done{false};
    std::size_t trimmedBytes = 0;
    {
        SchedulerOptions options;
        options.workerCount = 2;
        options.stackSize = StackSize::Small;
        options.stackAllocator = &counting;
        options.stackPoolBytes = 64 * StackSize::Small;
        Scheduler scheduler(options);
        std::thread trimmer(
            [&]
            {
                while (!done.load(std::memory_order_acquire))
                {
                    trimmedBytes += scheduler.TrimStackPool();
                    std::this_thread::yield();
                }
            });
        const int rounds = static_cast<int>(TestSupport::Scaled(200));
        for (int round = 0; round < rounds; ++round)
        {
            // 300 at once overflow both workers' caches (64 each), so batches go to the pool.
            TaskOptions sized;
            sized.stackSize = round % 4 == 0 ? 2 * StackSize::Small : 0; // some of another size
            SuspendAllThenFinish(scheduler, 300, sized, false);
        }
        done.store(true, std::memory_order_release);
        trimmer.join();
        INFO("stacks allocated " << counting.allocated << ", trimmed " << trimmedBytes << " bytes");
        CHECK(counting.allocated - counting.released <= 2 * 64 + 64); // caches, pool
    }
    CHECK(counting.released == counting.allocated);
}

TEST_CASE("ConcurrentStack: pushes and pops from many threads lose nothing")
{
    struct Node
    {
        Node* next = nullptr;
        int value = 0;
    };
    ConcurrentStack<Node> stack;
    const int perThread = static_cast<int>(TestSupport::Scaled(200000));
    const int threads = 4;
    std::vector<std::vector<Node>> nodes(threads, std::vector<Node>(perThread));
    std::atomic<long> popped{0};
    std::atomic<long> sum{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            long localSum = 0;
            long localCount = 0;
            for (int i = 0; i < perThread; ++i)
            {
                nodes[t][i].value = 1;
                stack.Push(&nodes[t][i]);
                if (Node* node = stack.Pop())
                {
                    localSum += node->value;
                    ++localCount;
                }
            }
            sum += localSum;
            popped += localCount;
        });
    for (auto& worker : workers)
        worker.join();
    long rest = 0;
    for (Node* node = stack.PopAll(); node; node = node->next)
        ++rest;
    REQUIRE(popped + rest == static_cast<long>(threads) * perThread);
    REQUIRE(sum == popped);
    REQUIRE(stack.IsEmpty());
}

TEST_CASE("BasicStack is LIFO and reverses to FIFO")
{
    struct Node
    {
        Node* next = nullptr;
        int value = 0;
    };
    Node a{nullptr, 1}, b{nullptr, 2}, c{nullptr, 3};
    BasicStack<Node> stack;
    stack.Push(&a);
    stack.Push(&b);
    stack.Push(&c);
    REQUIRE(stack.Pop()->value == 3);
    stack.Reverse();
    REQUIRE(stack.Pop()->value == 1);
    REQUIRE(stack.Pop()->value == 2);
    REQUIRE(stack.Pop() == nullptr);
    REQUIRE(stack.IsEmpty());
}

namespace
{
// The protection of the mapping that holds `address`, as /proc/self/maps shows it ("rw-p").
std::string ProtectionAt(const void* address)
{
    const auto where = reinterpret_cast<std::uintptr_t>(address);
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    REQUIRE(maps != nullptr);
    char line[512];
    std::string found;
    while (found.empty() && std::fgets(line, sizeof line, maps))
    {
        unsigned long low = 0;
        unsigned long high = 0;
        char protection[8] = {};
        if (std::sscanf(line, "%lx-%lx %7s", &low, &high, protection) == 3 && where >= low && where < high)
            found = protection;
    }
    std::fclose(maps);
    return found;
}

// Makes stacks itself, recording what the scheduler asked for.
struct GuardSizeRecorder final : IStackAllocator
{
    std::mutex lock;
    std::vector<std::pair<std::size_t, std::size_t>> asked; // usable, guard
    void* lastBase = nullptr;
    void* Allocate(std::size_t, StackGuard) override
    {
        FAIL("the scheduler asks AllocateStack when it is overridden");
        return nullptr;
    }
    void Deallocate(void*, std::size_t, StackGuard) noexcept override {}
    void* AllocateStack(std::size_t usable, std::size_t guard) override
    {
        void* base = DefaultStackAllocator().AllocateStack(usable, guard);
        std::lock_guard hold(lock);
        asked.emplace_back(usable, guard);
        lastBase = base;
        return base;
    }
    void DeallocateStack(void* base, std::size_t usable, std::size_t guard) noexcept override
    {
        DefaultStackAllocator().DeallocateStack(base, usable, guard);
    }
};

// Overrides only the members older allocators have: the scheduler builds the guard on them.
struct AllocateOnly final : IStackAllocator
{
    std::vector<std::size_t> sizes;
    void* lastBase = nullptr;
    void* Allocate(std::size_t size, StackGuard guard) override
    {
        sizes.push_back(size);
        lastBase = DefaultStackAllocator().Allocate(size, guard);
        return lastBase;
    }
    void Deallocate(void* base, std::size_t size, StackGuard guard) noexcept override
    {
        DefaultStackAllocator().Deallocate(base, size, guard);
    }
};
} // namespace

TEST_CASE("The allocator is told each stack's guard size, and the whole guard is inaccessible")
{
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    struct Case
    {
        StackGuard guard;
        std::size_t guardBytes; // SchedulerOptions::stackGuardBytes
        std::size_t expected;   // what the allocator is asked for
    };
    const Case which = GENERATE_COPY(Case{StackGuard::Page, kDefaultStackGuardBytes, 64 * 1024},
                                     Case{StackGuard::Page, 200 * 1024, 200 * 1024},
                                     Case{StackGuard::Page, 1, page}, Case{StackGuard::Page, 0, page},
                                     Case{StackGuard::None, 256 * 1024, 0});
    GuardSizeRecorder stacks;
    SchedulerOptions options;
    options.stackAllocator = &stacks;
    options.stackGuard = which.guard;
    options.stackGuardBytes = which.guardBytes;
    options.stackSize = StackSize::Small;
    Scheduler host(options);
    std::string below, bottom;
    host.Start(
            [&]
            {
                auto* base = static_cast<unsigned char*>(stacks.lastBase);
                if (which.expected != 0)
                    below = ProtectionAt(base + which.expected - 1);
                bottom = ProtectionAt(base + which.expected);
            })
        .Detach();
    host.RunUntilIdle();
    REQUIRE(stacks.asked.size() == 1);
    CHECK(stacks.asked[0].first == StackSize::Small);
    CHECK(stacks.asked[0].second == which.expected);
    if (which.expected != 0)
        CHECK(below.substr(0, 3) == "---");
    CHECK(bottom.substr(0, 2) == "rw");
}

TEST_CASE("An allocator that overrides only Allocate gets its stacks' whole guard made inaccessible")
{
    AllocateOnly stacks;
    SchedulerOptions options;
    options.stackAllocator = &stacks;
    options.stackGuardBytes = 128 * 1024;
    std::string guardBottom, guardTop, usable;
    {
        Scheduler host(options);
        host.Start(
                [&]
                {
                    auto* base = static_cast<unsigned char*>(stacks.lastBase);
                    guardBottom = ProtectionAt(base);
                    guardTop = ProtectionAt(base + 128 * 1024 - 1);
                    usable = ProtectionAt(base + 128 * 1024);
                })
            .Detach();
        host.RunUntilIdle();
    }
    REQUIRE(stacks.sizes.size() == 1);
    CHECK(stacks.sizes[0] == StackSize::Medium + 128 * 1024);
    CHECK(guardBottom.substr(0, 3) == "---");
    CHECK(guardTop.substr(0, 3) == "---");
    CHECK(usable.substr(0, 2) == "rw");
}
