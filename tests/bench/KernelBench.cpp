// Kernel benchmarks and the ConcurrentTasks side of the peer workloads no layer suite
// covers: context switch, yield, ping-pong on one worker and across threads, spawn and
// join, a timed wait resumed early against an untimed one, skynet, and the memory a suspended
// task and a suspended coroutine hold.
//
// Rows pair with the peers' (tests/bench/peers/) by name: BM_<Workload>_<Impl>, where a name
// without an implementation suffix is ConcurrentTasks' own (the kernel's fixed row names). Every
// row reports items_per_second (what one item is, is said per benchmark) or, for memory rows, the
// bytes_per_item counter; tools/perf-report turns those into the comparison table.
//
// Where a benchmark's loop runs inside a task, the task is on a worker thread: the state loop
// is plain code and runs on any stack, and UseRealTime() makes the figure wall-clock time, which
// is what a task's latency is to its user.

#include "PingPong.h"
#include "Scaling.h"
#include "peers/Measure.h"

#include <TC/Core.h>

#include "kernel/TestMailbox.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace
{
using namespace std::chrono_literals;

TC::SchedulerOptions Workers(unsigned count, std::size_t stackSize = TC::StackSize::Medium,
                             TC::StackGuard guard = TC::StackGuard::Page)
{
    TC::SchedulerOptions options;
    options.workerCount = count;
    options.stackSize = stackSize;
    options.stackGuard = guard;
    options.name = "bench";
    return options;
}

// Starts `first` and then `second` from a task of `scheduler` and joins both. Starting them from
// inside the scheduler puts both in the worker's own FIFO queue, so the two always alternate in
// the same order; the shared queue is FIFO only per producer, and two tasks submitted from two
// threads would start in either order.
template <class First, class Second>
void RunPair(TC::Scheduler& scheduler, First first, Second second)
{
    scheduler
        .Start(
            [&]
            {
                TC::JoinHandle firstHandle = scheduler.Start(std::move(first));
                TC::JoinHandle secondHandle = scheduler.Start(std::move(second));
                secondHandle.Join();
                firstHandle.Join();
            })
        .Join();
}

// The guide's Mailbox (guide "Custom primitives"), shared with the kernel tests: the ping-pong
// rows measure exactly this handoff, the one the kernel's ping-pong target names.
using TestSupport::Mailbox;

using TCBench::Serve;

// ---------------------------------------------------------------------------------------------
// BM_TaskSwitch: two tasks on one worker hand the processor to each other through the bare
// protocol -- each resumes the other's handle, then suspends publishing its own -- so an item is
// one switch: one ResumeTask (a local-queue push), one SuspendTask (a direct switch to the next
// local task) and one OnSuspended call, with no read-modify-write at all.

// Where one side of the baton keeps its handle while it is suspended. Both sides run on the same
// worker thread, and OnSuspended runs on that thread before the partner continues, so plain
// loads and stores suffice (release/acquire are free on x86 and keep the code honest elsewhere).
class BatonSide : private TC::ISuspendCallback
{
public:
    TC::ISuspendCallback* Callback() noexcept { return this; }
    bool IsSuspended() const noexcept { return handle_.load(std::memory_order_acquire) != nullptr; }
    TC::SuspendedTask Take() noexcept
    {
        const TC::SuspendedTask task = handle_.load(std::memory_order_acquire);
        handle_.store(nullptr, std::memory_order_relaxed); // only this worker thread touches it
        return task;
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        handle_.store(task, std::memory_order_release);
    }
    std::atomic<TC::SuspendedTask> handle_{nullptr};
};

void BM_TaskSwitch(benchmark::State& state)
{
    TC::Scheduler scheduler(Workers(1));
    BatonSide sideA;
    BatonSide sideB;
    bool stop = false; // written and read on the one worker thread only
    auto b = [&]
    {
        for (;;)
        {
            TC::SuspendTask(sideB.Callback());
            if (stop)
                return;
            TC::ResumeTask(sideA.Take());
        }
    };
    auto a = [&]
    {
        while (!sideB.IsSuspended())
            TC::YieldTask();
        for (auto _ : state)
        {
            TC::ResumeTask(sideB.Take());
            TC::SuspendTask(sideA.Callback());
        }
        stop = true;
        TC::ResumeTask(sideB.Take());
    };
    RunPair(scheduler, b, a);
    TCBench::ReportItems(state, 2); // A -> B and B -> A
}
BENCHMARK(BM_TaskSwitch)->UseRealTime();

// BM_Yield_TC: two tasks on one worker alternate with YieldTask; an item is one yield (which goes
// to the back of the scheduler's shared queue, so it costs more than the direct switch above).
void BM_Yield_TC(benchmark::State& state)
{
    TC::Scheduler scheduler(Workers(1));
    std::atomic<bool> stop{false};
    auto b = [&]
    {
        while (!stop.load(std::memory_order_relaxed)) // one worker: no ordering needed
            TC::YieldTask();
    };
    auto a = [&]
    {
        for (auto _ : state)
            TC::YieldTask();
        stop.store(true, std::memory_order_relaxed);
    };
    RunPair(scheduler, b, a);
    TCBench::ReportItems(state, 2);
}
BENCHMARK(BM_Yield_TC)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Ping-pong through two Mailboxes: an item is one round trip (request and reply).

// The guide's Mailbox through TCBench::RunPingPong (PingPong.h); the timed rows take each reply
// with a 1 s deadline.
void RunPingPong(benchmark::State& state, TC::Scheduler& clientScheduler,
                 TC::Scheduler& serverScheduler)
{
    TCBench::RunPingPong<Mailbox>(state, clientScheduler, serverScheduler);
}

void RunTimedPingPong(benchmark::State& state, TC::Scheduler& scheduler)
{
    TCBench::RunPingPong<Mailbox>(state, scheduler, scheduler,
                                  [](Mailbox& replies, int& reply)
                                  { return replies.Take(reply, 1s); });
}

void BM_PingPongSameThread(benchmark::State& state)
{
    TC::Scheduler scheduler(Workers(1));
    RunPingPong(state, scheduler, scheduler);
}
BENCHMARK(BM_PingPongSameThread)->UseRealTime();

// Two schedulers with one worker each: every Put resumes a task that lives on the other thread.
void BM_PingPongCrossThread(benchmark::State& state)
{
    TC::Scheduler clientScheduler(Workers(1));
    TC::Scheduler serverScheduler(Workers(1));
    RunPingPong(state, clientScheduler, serverScheduler);
}
BENCHMARK(BM_PingPongCrossThread)->UseRealTime();

// The same-thread ping-pong with the client's wait untimed, and with a 1 s deadline that never
// passes: the difference is the cost of arming and cancelling a deadline.
void BM_UntimedWait(benchmark::State& state)
{
    TC::EnableTimers(); // both rows run with the timer thread present
    TC::Scheduler scheduler(Workers(1));
    RunPingPong(state, scheduler, scheduler);
}
BENCHMARK(BM_UntimedWait)->UseRealTime();

void BM_TimedWaitResumedEarly(benchmark::State& state)
{
    TC::EnableTimers();
    TC::Scheduler scheduler(Workers(1));
    RunTimedPingPong(state, scheduler);
}
BENCHMARK(BM_TimedWaitResumedEarly)->UseRealTime();

// A wait whose timeout is zero, on the guide's Mailbox with nothing in it: an item is one
// Take(value, 0), which publishes the waiter and times out at once. range(0) == 0: from the
// benchmark's (converted) thread; 1: from a task, which suspends and is rescheduled. The arming
// thread fires such a deadline itself; through the timer thread it took about 25 us.
void BM_TimedWaitExpired(benchmark::State& state)
{
    TC::EnableTimers(); // without it a timed wait has no limit
    Mailbox box;
    bool allTimedOut = true;
    auto takeAll = [&]
    {
        int value = 0;
        for (auto _ : state)
            allTimedOut &= !box.Take(value, TC::Duration::Zero());
    };
    if (state.range(0) == 0)
        takeAll();
    else
    {
        TC::Scheduler scheduler(Workers(1));
        scheduler.Start(takeAll).Join();
    }
    if (TCBench::Expect(state, allTimedOut, "a Take from an empty mailbox did not time out"))
        TCBench::ReportItems(state, 1);
}
BENCHMARK(BM_TimedWaitExpired)->Arg(0)->Arg(1)->UseRealTime();

// BM_ScalingPingPongPairs_TC: range(0) independent client/server pairs, each the same-thread
// ping-pong above, on a scheduler of range(0) workers; an item is one round trip of one pair.
// Each pair is started by a root task that starts both sides from its worker, so a pair begins
// on one worker: the figure shows whether the scheduler keeps independent work apart (ideal:
// range(0) times the one-worker rate) or lets stealing split pairs across threads. Two counters
// tell the causes apart: pair_round_trip_ns is the round trip as each client timed its own
// rounds (so the pairs' staggered starts do not count), pairs_apart the share of pairs whose two
// sides finished on different threads.
constexpr int kPairRounds = 10'000;

// One pair's two mailboxes, on cache lines of their own: pairs that shared a line would slow
// each other down for a reason that is the benchmark's, not the scheduler's.
struct alignas(128) PairMailboxes
{
    Mailbox requests;
    Mailbox replies;
    std::int64_t clientNs = 0;    // written by the client only, read after its root's Join
    std::thread::id serverThread; // written by the server before it returns, read likewise
    std::int64_t apart = 0;
};

void BM_ScalingPingPongPairs_TC(benchmark::State& state)
{
    const auto pairs = static_cast<unsigned>(state.range(0));
    TC::Scheduler scheduler(Workers(pairs));
    std::vector<PairMailboxes> boxes(pairs);
    std::vector<TC::JoinHandle> roots(pairs);
    for (auto _ : state)
    {
        for (unsigned pair = 0; pair < pairs; ++pair)
            roots[pair] = scheduler.Start(
                [&, pair]
                {
                    PairMailboxes& box = boxes[pair];
                    TC::JoinHandle server = scheduler.Start(
                        [&box]
                        {
                            Serve(box.requests, box.replies);
                            box.serverThread = std::this_thread::get_id();
                        });
                    const auto start = std::chrono::steady_clock::now();
                    for (int round = 0; round < kPairRounds; ++round)
                    {
                        box.requests.Put(1);
                        benchmark::DoNotOptimize(box.replies.Take());
                    }
                    box.clientNs += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count();
                    box.requests.Put(-1);
                    server.Join();
                    box.apart += box.serverThread != std::this_thread::get_id() ? 1 : 0;
                });
        for (TC::JoinHandle& root : roots)
            root.Join();
    }
    const std::int64_t roundTrips = static_cast<std::int64_t>(pairs) * kPairRounds;
    TCBench::ReportItems(state, roundTrips);
    std::int64_t clientNs = 0;
    std::int64_t apart = 0;
    for (const PairMailboxes& box : boxes)
    {
        clientNs += box.clientNs;
        apart += box.apart;
    }
    const auto iterations =
        static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["pair_round_trip_ns"] =
        static_cast<double>(clientNs) / (iterations * static_cast<double>(roundTrips));
    state.counters["pairs_apart"] = static_cast<double>(apart) / (iterations * pairs);
}
BENCHMARK(BM_ScalingPingPongPairs_TC)->Apply(TCBench::WorkerCounts)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SpawnJoinOneWorker: a task on a one-worker scheduler starts 1000 empty tasks, then joins them
// all; an item is one task started, run, finished and joined. Each task only counts itself, in a
// plain integer: every task runs on the one worker, and the count is read after the driver's
// Join (a locked add would put one more RMW, ~7 ns here, into a row meant to time the task).
constexpr int kSpawnBatch = 1000;

void BM_SpawnJoinOneWorker(benchmark::State& state)
{
    TC::Scheduler scheduler(Workers(1));
    std::int64_t ran = 0;
    TC::JoinHandle driver = scheduler.Start(
        [&]
        {
            std::vector<TC::JoinHandle> handles(kSpawnBatch);
            for (auto _ : state)
            {
                for (TC::JoinHandle& handle : handles)
                    handle = scheduler.Start([&ran] { ++ran; });
                for (TC::JoinHandle& handle : handles)
                    handle.Join();
            }
        });
    driver.Join();
    if (TCBench::Expect(state, ran == state.iterations() * kSpawnBatch, "tasks lost"))
        TCBench::ReportItems(state, kSpawnBatch);
}
BENCHMARK(BM_SpawnJoinOneWorker)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SkynetDepthFirst_TC: the skynet tree -- 1 000 000 leaf tasks, every node starts 10 children
// and sums what they return -- on two workers; an item is one task (1 111 111 per tree, root
// excluded).
//
// Stackful tasks hold a stack from start to finish, and a scheduler that runs its local queue in
// FIFO order expands the tree breadth first, so "start all ten, then join" at every level would
// keep all 1.1 million stacks alive at once (gigabytes, and past vm.max_map_count). The top two
// levels therefore fan out (100 subtrees spread over the workers); below them each node starts a
// child and joins it before the next, the depth-first order Boost.Fiber's launch::dispatch and
// oneTBB's LIFO stealing give their own skynet, so at most a few hundred tasks live at once.
constexpr std::int64_t kSkynetLeaves = 1'000'000;
constexpr std::int64_t kSkynetTasks = 1'111'110;
constexpr std::int64_t kSkynetSum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;
constexpr int kSkynetFanOutLevels = 2;

std::int64_t Skynet(TC::Scheduler& scheduler, std::int64_t num, std::int64_t size, int level)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    auto child = [&scheduler, &results, num, childSize, level](int i)
    {
        return [&scheduler, &results, num, childSize, level, i]
        {
            results[static_cast<std::size_t>(i)] =
                Skynet(scheduler, num + i * childSize, childSize, level + 1);
        };
    };
    if (level < kSkynetFanOutLevels)
    {
        std::array<TC::JoinHandle, 10> handles;
        for (int i = 0; i < 10; ++i)
            handles[static_cast<std::size_t>(i)] = scheduler.Start(child(i));
        for (TC::JoinHandle& handle : handles)
            handle.Join();
    }
    else
    {
        for (int i = 0; i < 10; ++i)
            scheduler.Start(child(i)).Join();
    }
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void RunSkynet(benchmark::State& state, unsigned workers)
{
    TC::Scheduler scheduler(Workers(workers, TC::StackSize::Small));
    std::int64_t sum = 0;
    for (auto _ : state)
    {
        scheduler.Start([&] { sum = Skynet(scheduler, 0, kSkynetLeaves, 0); }).Join();
        if (!TCBench::Expect(state, sum == kSkynetSum, "skynet: wrong sum"))
            return;
    }
    TCBench::ReportItems(state, kSkynetTasks);
}

void BM_SkynetDepthFirst_TC(benchmark::State& state)
{
    RunSkynet(state, 2);
}
BENCHMARK(BM_SkynetDepthFirst_TC)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_ScalingSkynet_TC: the same tree on range(0) workers.
void BM_ScalingSkynet_TC(benchmark::State& state)
{
    RunSkynet(state, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_ScalingSkynet_TC)
    ->Apply(TCBench::WorkerCounts)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Memory rows: what one suspended waiter holds, measured over 100 000 of them at once.
constexpr std::size_t kParkedCount = 100'000;

// Keeps every waiter that suspends on it until ResumeAll; chains their entries through the
// leading `next` link, so parking allocates nothing of its own.
class ParkingLot : private TC::ISuspendCallback
{
public:
    TC::ISuspendCallback* Callback() noexcept { return this; }
    std::size_t Parked() const noexcept { return parked_.load(std::memory_order_acquire); }

    void ResumeAll() noexcept
    {
        for (TC::SuspendedTaskEntry* entry = stack_.PopAll(); entry != nullptr;)
        {
            // `next` is the kernel's again once the handle reaches ResumeTask: read it first.
            TC::SuspendedTaskEntry* next = entry->next;
            TC::ResumeTask(TC::SuspendedTask(entry));
            entry = next;
        }
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        stack_.Push(task.Entry());
        // Release: a reader that sees the count also sees the push before it.
        parked_.fetch_add(1, std::memory_order_release);
    }

    TC::ConcurrentStack<TC::SuspendedTaskEntry> stack_;
    std::atomic<std::size_t> parked_{0};
};

// BM_TaskMemory_TC: resident memory per suspended stackful task. Small stacks without guard
// pages: 100 000 guarded stacks would need 200 000 mappings, past Linux's vm.max_map_count.
// A fresh scheduler per iteration, so every stack is newly mapped and counted.
void BM_TaskMemory_TC(benchmark::State& state)
{
    double bytesPerTask = 0;
    for (auto _ : state)
    {
        std::vector<TC::JoinHandle> handles(kParkedCount);
        ParkingLot lot;
        {
            TC::Scheduler scheduler(Workers(1, TC::StackSize::Small, TC::StackGuard::None));
            const std::int64_t before = TCBench::ResidentBytesAfterTrim();
            for (TC::JoinHandle& handle : handles)
                handle = scheduler.Start([&lot] { TC::SuspendTask(lot.Callback()); });
            while (lot.Parked() < kParkedCount)
                std::this_thread::sleep_for(1ms);
            const std::int64_t after = TCBench::ResidentBytes();
            bytesPerTask += static_cast<double>(after - before) / kParkedCount;
            lot.ResumeAll();
            for (TC::JoinHandle& handle : handles)
                handle.Join();
        }
    }
    TCBench::ReportBytesPerItem(state, bytesPerTask);
}
BENCHMARK(BM_TaskMemory_TC)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The smallest coroutine that waits through the protocol: eager, detached, frees its frame when
// it finishes.
struct DetachedCoroutine
{
    struct promise_type
    {
        DetachedCoroutine get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

DetachedCoroutine ParkCoroutine(ParkingLot& lot, std::atomic<std::size_t>& finished)
{
    co_await TC::SuspendTaskAsync(lot.Callback());
    finished.fetch_add(1, std::memory_order_relaxed);
}

// BM_CoroutineMemory_TC: heap bytes per coroutine suspended in co_await SuspendTaskAsync -- its
// frame, which holds the awaiter and so the waiter's entry; nothing else is allocated. Resumed
// with no executor current, each finishes inline on this thread.
void BM_CoroutineMemory_TC(benchmark::State& state)
{
    double bytesPerCoroutine = 0;
    bool allFinished = true;
    for (auto _ : state)
    {
        ParkingLot lot;
        std::atomic<std::size_t> finished{0};
        const std::int64_t before = TCBench::MallocBytesInUse();
        for (std::size_t i = 0; i < kParkedCount; ++i)
            ParkCoroutine(lot, finished);
        const std::int64_t after = TCBench::MallocBytesInUse();
        bytesPerCoroutine += static_cast<double>(after - before) / kParkedCount;
        allFinished &= lot.Parked() == kParkedCount;
        lot.ResumeAll();
        allFinished &= finished.load() == kParkedCount;
    }
    if (TCBench::Expect(state, allFinished, "coroutines lost"))
        TCBench::ReportBytesPerItem(state, bytesPerCoroutine);
}
BENCHMARK(BM_CoroutineMemory_TC)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
} // namespace
