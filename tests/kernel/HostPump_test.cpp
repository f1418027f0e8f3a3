// Schedulers pumped by their host: RunPending, RunFor's budget, RunUntilIdle, WaitForWork,
// priorities, the host-thread rule and nested waits on the host.

#include "TestMailbox.h"
#include "TestStackAllocator.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace TC;
using namespace std::chrono_literals;
using TestSupport::CountingStackAllocator;
using TestSupport::Mailbox;

TEST_CASE("RunPending runs what was queued when it began, and reports what is left")
{
    Scheduler host(0);
    int ran = 0;
    std::vector<JoinHandle> tasks;
    for (int i = 0; i < 3; ++i)
        tasks.push_back(host.Start([&] {
            ++ran;
            YieldTask(); // requeued behind: not part of this RunPending
            ++ran;
        }));
    PumpResult first = host.RunPending();
    REQUIRE(first.ran == 3);
    REQUIRE(ran == 3);
    REQUIRE(first.pending == 3);
    PumpResult second = host.RunPending(2);
    REQUIRE(second.ran == 2);
    REQUIRE(second.pending == 1);
    host.RunUntilIdle();
    REQUIRE(ran == 6);
    for (auto& task : tasks)
        task.Join();
}

TEST_CASE("RunFor checks its budget between tasks, runs at least one, overruns by one at most")
{
    using Clock = std::chrono::steady_clock;
    // Before the scheduler: a failed REQUIRE unwinds through ~Scheduler, which runs what is left.
    std::vector<Clock::time_point> starts;
    Scheduler host(0);
    std::vector<JoinHandle> tasks;
    for (int i = 0; i < 20; ++i)
        tasks.push_back(host.Start([&] {
            starts.push_back(Clock::now());
            std::this_thread::sleep_for(2ms);
        }));
    // A zero budget still runs one task.
    PumpResult none = host.RunFor(Duration::Zero());
    REQUIRE(none.ran == 1);
    REQUIRE(none.left == Duration::Zero());
    // Every task after the first starts before the deadline: the overrun is the last task alone.
    // Each task lasts at least 2 ms, so a pump that checks its 7 ms deadline before each start
    // runs 4 at most (starting at 0, >= 2, >= 4 and >= 6 ms); one that did not would run them
    // all. (The tasks' own start times are no test of it: a task reads the clock after the pump
    // decided to start it, later still on a loaded or emulated machine.)
    starts.clear();
    const auto begin = Clock::now();
    PumpResult some = host.RunFor(7ms);
    REQUIRE(some.ran >= 1);
    REQUIRE(some.ran <= 4);
    REQUIRE(some.ran == starts.size());
    REQUIRE(starts.front() >= begin);
    REQUIRE(some.pending == 20 - 1 - some.ran);
    host.RunUntilIdle();
    REQUIRE(starts.size() == 19);
    for (auto& task : tasks)
        task.Join();
}

TEST_CASE("RunFor spends its budget: it stops no earlier than the deadline clock's slack allows")
{
    // The check between tasks reads the deadline clock, which may run up to 25 us ahead of the
    // steady clock: the turn may end that much early, and no more.
    using Clock = std::chrono::steady_clock;
    constexpr auto kSlack = std::chrono::microseconds(25);
    Scheduler host(0);
    std::vector<JoinHandle> tasks;
    for (int i = 0; i < 4000; ++i) // about 1 us each: 4 ms of work for a 2 ms budget
        tasks.push_back(host.Start(
            []
            {
                const auto until = Clock::now() + std::chrono::microseconds(1);
                while (Clock::now() < until)
                {
                }
            }));
    for (int round = 0; round < 5; ++round)
    {
        const auto begin = Clock::now();
        const PumpResult result = host.RunFor(2ms);
        const auto spent = Clock::now() - begin;
        if (result.pending == 0)
            break; // ran out of work before the budget: nothing to check this round
        INFO("round " << round << ": ran " << result.ran << ", spent "
                      << std::chrono::duration_cast<std::chrono::microseconds>(spent).count()
                      << " us");
        CHECK(spent >= 2ms - kSlack);
        CHECK(result.left <= Duration(kSlack));
    }
    host.RunUntilIdle();
    for (auto& task : tasks)
        task.Join();
}

TEST_CASE("Priorities: the host can run only this frame's work")
{
    Scheduler host(0);
    std::vector<int> order;
    auto background = host.Start([&] { order.push_back(2); }, {.name = "bg", .priority = Priority::Normal});
    auto frame = host.Start([&] { order.push_back(1); }, {.name = "frame", .priority = Priority::High});
    PumpResult high = host.RunPending(SIZE_MAX, Priority::High);
    REQUIRE(high.ran == 1);
    REQUIRE(order == std::vector<int>{1});
    host.RunUntilIdle();
    REQUIRE(order == std::vector<int>{1, 2});
    background.Join();
    frame.Join();
}

TEST_CASE("High priority work runs before normal work queued earlier")
{
    Scheduler host(0);
    std::vector<int> order;
    auto a = host.Start([&] { order.push_back(2); });
    auto b = host.Start([&] { order.push_back(1); }, {.priority = Priority::High});
    host.RunUntilIdle();
    REQUIRE(order == std::vector<int>{1, 2});
    a.Join();
    b.Join();
}

TEST_CASE("WaitForWork wakes on a submission from another thread, and times out")
{
    Scheduler host(0);
    REQUIRE_FALSE(host.WaitForWork(10ms));
    std::atomic<bool> ran{false};
    JoinHandle task;
    std::thread submitter([&] {
        std::this_thread::sleep_for(10ms);
        task = host.Start([&] { ran = true; });
    });
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(host.WaitForWork(10s));
    REQUIRE(std::chrono::steady_clock::now() - start < 5s);
    submitter.join();
    host.RunUntilIdle();
    REQUIRE(ran);
    task.Join();
}

TEST_CASE("Only the host thread pumps a host scheduler; a worker scheduler is not pumped")
{
    Scheduler host(0);
    host.RunPending();
    std::thread other([&] { REQUIRE_THROWS_AS(host.RunPending(), std::logic_error); });
    other.join();
    Scheduler workers(1);
    REQUIRE_THROWS_AS(workers.RunPending(), std::logic_error);
}

TEST_CASE("A host waiting on a mailbox keeps running its own work (nested wait)")
{
    Mailbox box;
    Scheduler host(0);
    host.RunPending(); // this thread is the host from now on
    // The value comes from a task pinned to the host: without the nested pump this deadlocks.
    auto producer = host.Start([&] { box.Put(11); });
    REQUIRE(box.Take() == 11);
    producer.Join();
}

namespace
{
// A coroutine that starts suspended; the host resumes it when it pumps.
struct HostJob
{
    struct promise_type
    {
        HostJob get_return_object() noexcept
        {
            return {std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
    std::coroutine_handle<> handle;
};

// Runs on the host's own stack and blocks as a converted thread: a nested wait.
HostJob WaitThenPass(Mailbox* waitOn, Mailbox* passTo, int level, std::vector<int>* order,
                     int* depth, int* deepest)
{
    ++*depth;
    *deepest = std::max(*deepest, *depth);
    const int value = waitOn->Take();
    order->push_back(level);
    --*depth;
    passTo->Put(value);
    co_return;
}
} // namespace

TEST_CASE("Nested host waits three deep, each with host-pinned work queued")
{
    Mailbox level1, level2, level3;
    Scheduler host(0);
    host.RunPending();
    std::vector<int> order;
    int depth = 1; // the host's own wait below
    int deepest = 1;
    host.Submit(WaitThenPass(&level2, &level1, 2, &order, &depth, &deepest).handle);
    host.Submit(WaitThenPass(&level3, &level2, 3, &order, &depth, &deepest).handle);
    auto leaf = host.Start([&] { level3.Put(7); });
    REQUIRE(level1.Take() == 7); // level 1: pumps job 2, which pumps job 3, which pumps the leaf
    REQUIRE(deepest == 3);
    REQUIRE(order == std::vector<int>{3, 2});
    leaf.Join();
}

namespace
{
// glibc declares pthread_self const, so a compiler may read it once for a whole function; a task
// that moves between threads must ask through something it cannot fold.
[[gnu::noinline]] std::thread::id ThisThread()
{
    asm volatile("" ::: "memory");
    return std::this_thread::get_id();
}
} // namespace

TEST_CASE("MoveCurrentTaskTo runs the rest of a task on the host and back on the workers")
{
    Scheduler host(0);
    Scheduler workers(2);
    host.RunPending();
    const auto hostThread = std::this_thread::get_id();
    std::vector<std::thread::id> seen;
    auto task = workers.Start([&] {
        seen.push_back(ThisThread());
        MoveCurrentTaskTo(host);
        seen.push_back(ThisThread());
        REQUIRE(Scheduler::Current() == &host);
        MoveCurrentTaskTo(workers);
        seen.push_back(ThisThread());
        REQUIRE(Scheduler::Current() == &workers);
    });
    task.Join(); // the host pumps while it waits: the middle part runs here
    // Each scheduler counted the task while it was theirs, and neither counts it now.
    REQUIRE(host.LiveTasks() == 0);
    REQUIRE(workers.LiveTasks() == 0);
    REQUIRE(seen.size() == 3);
    REQUIRE(seen[0] != hostThread);
    REQUIRE(seen[1] == hostThread);
    REQUIRE(seen[2] != hostThread);
}

// The host thread's starts between pumps go to the host worker's own queue (no shared-queue
// round trip, blocks from its cache) -- but only once a pump has emptied the shared queue, so
// that they never overtake what the host queued there before it first pumped.
TEST_CASE("The host's submissions between pumps keep their order, also with what it queued before")
{
    Scheduler host(0);
    Mailbox box;
    std::vector<char> order;
    std::vector<JoinHandle> tasks;
    auto start = [&](char name)
    { tasks.push_back(host.Start([&order, name] { order.push_back(name); })); };
    tasks.push_back(host.Start(
        [&]
        {
            (void)box.Take();
            order.push_back('w');
        }));
    start('a');
    start('b');                           // before the first pump: the shared queue
    REQUIRE(host.RunPending(2).ran == 2); // binds this thread as the host; 'w' waits, 'b' is left
    start('c');                           // must not overtake 'b'
    host.RunUntilIdle();
    // The host worker's own queue from here on, for starts and a resume alike.
    start('d');
    box.Put(1);
    start('e');
    REQUIRE(host.RunPending().ran == 3);
    REQUIRE(order == std::vector<char>{'a', 'b', 'c', 'd', 'w', 'e'});
    for (JoinHandle& task : tasks)
        task.Join();
    REQUIRE(host.LiveTasks() == 0);
}

TEST_CASE("Host starts between pumps, tasks' own starts and another thread's starts all run once")
{
    // The host worker's queue and caches are used by the host thread between pumps while another
    // thread starts tasks through the shared queue and frees handles (ThreadSanitizer watches).
    Scheduler host(0);
    host.RunUntilIdle(); // bound, and the shared queue found empty
    constexpr int kRounds = 200;
    constexpr int kPerRound = 20;
    std::atomic<int> ran{0};
    std::atomic<bool> outsideDone{false};
    std::thread outside(
        [&]
        {
            for (int i = 0; i < kRounds * kPerRound; ++i)
                host.Start([&] { ran.fetch_add(1); }).Detach();
            outsideDone = true;
        });
    std::vector<JoinHandle> handles;
    for (int round = 0; round < kRounds; ++round)
    {
        for (int i = 0; i < kPerRound; ++i)
            handles.push_back(host.Start(
                [&]
                {
                    ran.fetch_add(1);
                    host.Start([&] { ran.fetch_add(1); }).Detach(); // from a task: the same queue
                }));
        host.RunFor(std::chrono::microseconds(50));
        if (round % 16 == 0)
        {
            for (JoinHandle& handle : handles)
                handle.Join(); // pumps while it waits
            handles.clear();
        }
    }
    outside.join();
    for (JoinHandle& handle : handles)
        handle.Join();
    host.RunUntilIdle();
    REQUIRE(outsideDone);
    REQUIRE(ran == 3 * kRounds * kPerRound);
    REQUIRE(host.LiveTasks() == 0);
}

// A task that ends within a pump's turn starts the next task that has never run on its own stack
// (as on a worker), but only while the turn's count, deadline and priorities allow. Each part
// has a scheduler of its own: a fairness pick every 61 picks would otherwise end a run of such
// starts early and hide a broken check.
TEST_CASE("Within a pump's turn, tasks start on the stack of the task that ended before them")
{
    CountingStackAllocator counting;
    SchedulerOptions options;
    options.stackAllocator = &counting;
    {
        Scheduler host(options);
        host.RunUntilIdle();
        int ran = 0;
        for (int i = 0; i < 50; ++i)
            host.Start([&] { ++ran; }).Detach();
        const PumpResult result = host.RunPending();
        REQUIRE(result.ran == 50);
        REQUIRE(result.pending == 0);
        REQUIRE(ran == 50);
        REQUIRE(counting.allocated == 1); // one stack for all (handed on, or pooled)
    }
    {
        // The count: RunPending(3) runs three and leaves the rest.
        Scheduler host(options);
        host.RunUntilIdle();
        int ran = 0;
        for (int i = 0; i < 10; ++i)
            host.Start([&] { ++ran; }).Detach();
        const PumpResult three = host.RunPending(3);
        REQUIRE(three.ran == 3);
        REQUIRE(ran == 3);
        REQUIRE(three.pending == 7);
        host.RunUntilIdle();
        REQUIRE(ran == 10);
    }
    {
        // The priorities: a High-only turn does not go on into Normal work.
        Scheduler host(options);
        host.RunUntilIdle();
        std::vector<char> order;
        host.Start([&] { order.push_back('h'); }, {.priority = Priority::High}).Detach();
        for (int i = 0; i < 3; ++i)
            host.Start([&] { order.push_back('n'); }).Detach();
        REQUIRE(host.RunUntilIdle(Priority::High).ran == 1);
        REQUIRE(order == std::vector<char>{'h'});
        host.RunUntilIdle();
        REQUIRE(order == std::vector<char>{'h', 'n', 'n', 'n'});
    }
    {
        // The deadline: tasks of 2 ms each in a 5 ms turn stop after about three, not all ten.
        Scheduler host(options);
        host.RunUntilIdle();
        int ran = 0;
        for (int i = 0; i < 10; ++i)
            host.Start(
                    [&]
                    {
                        std::this_thread::sleep_for(2ms);
                        ++ran;
                    })
                .Detach();
        const PumpResult budgeted = host.RunFor(5ms);
        REQUIRE(budgeted.ran >= 1);
        REQUIRE(budgeted.ran <=
                4); // the deadline is checked before each start, one overrun at most
        REQUIRE(ran == static_cast<int>(budgeted.ran));
        REQUIRE(budgeted.pending == 10 - budgeted.ran);
        host.RunUntilIdle();
        REQUIRE(ran == 10);
        REQUIRE(host.LiveTasks() == 0);
    }
    REQUIRE(counting.released == counting.allocated);
}

// After ~Scheduler the host worker's caches are emptied for good: a handle the host thread
// releases then frees its task's block, and the last one frees the scheduler's core. The pooled
// stacks went back to the allocator with ~Scheduler already (a core kept by handles, or by a
// task that moved elsewhere, holds no stack of its own).
TEST_CASE("The host releases its tasks' handles after the scheduler is gone: the core is freed")
{
    CountingStackAllocator counting;
    std::vector<JoinHandle> handles;
    int ran = 0;
    {
        SchedulerOptions options;
        options.stackAllocator = &counting;
        Scheduler host(options);
        host.RunUntilIdle(); // the host's own queue and caches from here on
        for (int i = 0; i < 100; ++i)
            handles.push_back(host.Start([&] { ++ran; }));
        host.RunUntilIdle();
    }
    REQUIRE(ran == 100);
    REQUIRE(counting.allocated >= 1);
    REQUIRE(counting.released == counting.allocated); // the handles keep the core, not its stacks
    for (JoinHandle& handle : handles)
        handle.Join(); // finished: returns at once, and frees the block
    handles.clear();
    REQUIRE(counting.released == counting.allocated);
}

TEST_CASE("A thread's waits stop pumping a host scheduler once it is destroyed, wherever")
{
    // A thread that pumped a scheduler runs its work while it waits (nested waits). The failure
    // this guards against: it kept the scheduler's core as its host after the Scheduler was destroyed on
    // another thread, or when a JoinHandle kept the core past ~Scheduler and then freed it from
    // another thread: its next wait pumped freed memory (ASan: heap-use-after-free; Release: a
    // crash once the memory was reused, as the allocations below make it).
    Scheduler workers(1);
    SECTION("destroyed on another thread")
    {
        auto* host = new Scheduler(0);
        host->RunUntilIdle(); // this thread becomes its host
        std::thread([host] { delete host; }).join();
    }
    SECTION("destroyed here, its core kept by a handle and freed on another thread")
    {
        auto* host = new Scheduler(0);
        JoinHandle kept = host->Start([] {});
        host->RunUntilIdle();
        delete host;                                // the handle keeps the core
        std::thread([&] { kept.Detach(); }).join(); // frees the core there
    }
    std::vector<void*> reuse;
    for (int i = 0; i < 64; ++i)
    {
        reuse.push_back(::operator new(4096));
        std::memset(reuse.back(), 0xAB, 4096);
    }
    JoinHandle sleeper = workers.Start([] { std::this_thread::sleep_for(20ms); });
    sleeper.Join(); // a converted-thread wait of this thread: pumps no host now
    for (void* block : reuse)
        ::operator delete(block);
    SUCCEED("the wait ended without touching the freed scheduler");
}

TEST_CASE("High work another thread queues runs before the host's own Normal tasks still queued")
{
    // While the host runs the first of 40 Normal tasks, another thread starts a High one: it
    // must run next. The failure this guards against: each Normal task that ended handed its stack straight to
    // the next Normal task of the host's own queue without looking at the shared High queue, so
    // the High task ran 40th.
    Scheduler host(0);
    host.RunUntilIdle(); // nothing queued: the host's later starts go to its own queue
    std::vector<int> order;
    std::atomic<bool> highQueued{false};
    std::thread submitter;
    constexpr int kNormal = 40;
    for (int i = 0; i < kNormal; ++i)
        host.Start(
                [&, i]
                {
                    order.push_back(i);
                    if (i != 0)
                        return;
                    submitter = std::thread(
                        [&]
                        {
                            TaskOptions high;
                            high.priority = Priority::High;
                            host.Start([&] { order.push_back(-1); }, high).Detach();
                            highQueued = true;
                        });
                    while (!highQueued)
                        std::this_thread::yield();
                })
            .Detach();
    host.RunUntilIdle(Priority::Normal);
    submitter.join();
    REQUIRE(order.size() == kNormal + 1);
    CHECK(order[1] == -1);
}

TEST_CASE("A thread that hosts two schedulers runs the work of both while it waits")
{
    // Its converted-thread waits pump every scheduler it hosts, not only the one it pumped last:
    // otherwise a task it started on the other and then joined never runs (a deadlock).
    std::atomic<bool> finished{false};
    std::thread watchdog(
        [&]
        {
            for (int i = 0; i < 2000 && !finished; ++i)
                std::this_thread::sleep_for(10ms);
            if (!finished)
            {
                std::fprintf(stderr, "two hosts: the join never returned (a deadlock)\n");
                std::_Exit(1);
            }
        });
    {
        Scheduler first(0);
        Scheduler second(0);
        first.RunUntilIdle();
        second.RunUntilIdle(); // this thread now hosts both
        int ranOnFirst = 0;
        int ranOnSecond = 0;
        first.Start([&] { ++ranOnFirst; }).Join();   // queued on the host's own queue of `first`
        second.Start([&] { ++ranOnSecond; }).Join(); // and of `second`
        // A task of one that waits for a task of the other: both must run from this one wait.
        JoinHandle relay = first.Start(
            [&]
            {
                JoinHandle inner = second.Start([&] { ++ranOnSecond; });
                inner.Join();
                ++ranOnFirst;
            });
        relay.Join();
        CHECK(ranOnFirst == 2);
        CHECK(ranOnSecond == 2);
    }
    finished = true;
    watchdog.join();
}

TEST_CASE("A host inside a wait when another thread destroys its scheduler hands the pumping over")
{
    // The host's converted-thread wait pumps its scheduler; ~Scheduler on another thread pumps it
    // too, to drain it. The failure this guards against: both pumped the one host worker at once (its queues and
    // running context: a crash, or TSan's data races), and the wait kept pumping, and touching the
    // sleeper list of, the core after it was freed (ASan: heap-use-after-free).
    const int tasks = GENERATE(0, 8);
    constexpr int kYields = 300;
    Scheduler workers(1);
    auto* host = new Scheduler(0);
    host->RunUntilIdle(); // this thread becomes its host
    std::atomic<int> finished{0};
    std::atomic<int> ranOnHost{0};
    std::atomic<bool> deleting{false};
    const auto hostThread = std::this_thread::get_id();
    for (int i = 0; i < tasks; ++i)
        host->Start(
                [&]
                {
                    // Alive when the destructor starts, and for a while during it.
                    for (int k = 0; k < kYields || !deleting; k += deleting ? 1 : 0)
                    {
                        ranOnHost += std::this_thread::get_id() == hostThread;
                        YieldTask();
                    }
                    ++finished;
                })
            .Detach();
    std::atomic<bool> destroyed{false};
    std::thread destroyer(
        [&]
        {
            std::this_thread::sleep_for(5ms); // the host is inside its wait by now
            deleting = true;
            delete host; // drains the tasks, wherever they run
            destroyed = true;
        });
    // A wait of the host thread that lasts until the scheduler is gone, and a little after.
    workers
        .Start(
            [&]
            {
                while (!destroyed)
                    std::this_thread::sleep_for(100us);
                std::this_thread::sleep_for(5ms);
            })
        .Join();
    destroyer.join();
    CHECK(finished == tasks); // every task ran to its end before the destructor returned
    INFO("yields run by the host's wait: " << ranOnHost.load());
    std::vector<void*> reuse; // the freed core's memory, reused and overwritten
    for (int i = 0; i < 64; ++i)
    {
        reuse.push_back(::operator new(4096));
        std::memset(reuse.back(), 0xAB, 4096);
    }
    workers.Start([] { std::this_thread::sleep_for(2ms); }).Join(); // a later wait pumps nothing
    for (void* block : reuse)
        ::operator delete(block);
}

TEST_CASE("RunFor and WaitForWork take a huge finite budget as a far deadline")
{
    // Both added the budget to the clock, a signed overflow for a Duration near Infinite()
    // (undefined behaviour: UBSan stops here in the asan preset; a wrapped deadline long past).
    const Duration huge = Duration::FromNanoseconds(INT64_MAX - 1);
    Scheduler host(0);
    int ran = 0;
    for (int i = 0; i < 3; ++i)
        host.Start([&] { ++ran; }).Detach();
    const PumpResult result = host.RunFor(huge);
    CHECK(result.ran == 3);
    CHECK(ran == 3);
    CHECK(result.left.Nanoseconds() > 0);
    std::thread submitter(
        [&]
        {
            std::this_thread::sleep_for(10ms);
            host.Start([&] { ++ran; }).Detach();
        });
    CHECK(host.WaitForWork(huge));
    submitter.join();
    host.RunUntilIdle();
    CHECK(ran == 4);
}

TEST_CASE("The thread that created a host scheduler, waiting before any thread pumped it, pumps "
          "it: a wait before the first frame does not deadlock on the tasks started there")
{
    Mailbox box; // before the scheduler: its destructor may still run the producer
    std::atomic<bool> done{false};
    // Should the wait not pump the scheduler, this ends it with a value the test rejects, so the
    // test fails instead of hanging.
    std::thread watchdog(
        [&]
        {
            for (int i = 0; i < 1000 && !done; ++i)
                std::this_thread::sleep_for(10ms);
            if (!done)
                box.Put(-1);
        });
    Scheduler host(0);
    auto producer = host.Start([&] { box.Put(7); });
    const int got = box.Take(); // a converted-thread wait, before any RunFor
    done = true;
    watchdog.join();
    REQUIRE(got == 7);
    producer.Join();
    REQUIRE_NOTHROW(host.RunPending()); // the wait made this thread the host
}

TEST_CASE("A host scheduler another thread pumped first is that thread's: the creator's waits "
          "leave its work to it")
{
    Mailbox box;
    Scheduler host(0);
    std::atomic<bool> hosting{false}, stop{false};
    std::atomic<std::thread::id> hostId{};
    std::thread hostThread(
        [&]
        {
            host.RunPending(); // the host from now on
            hostId = std::this_thread::get_id();
            hosting = true;
            while (!stop)
                if (host.RunFor(Duration(1ms)).ran == 0)
                    host.WaitForWork(Duration(1ms));
        });
    while (!hosting) // not a TC wait: that would make this thread the host if it came first
        std::this_thread::yield();
    std::atomic<std::thread::id> ranOn{};
    auto task = host.Start(
        [&]
        {
            ranOn = std::this_thread::get_id();
            box.Put(5);
        });
    REQUIRE(box.Take() == 5); // the creator's wait does not run it
    REQUIRE(ranOn.load() == hostId.load());
    stop = true;
    hostThread.join();
    task.Join();
    REQUIRE_THROWS_AS(host.RunPending(), std::logic_error);
}
