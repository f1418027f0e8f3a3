// SyncBench: the synchronization layer's benchmarks -- uncontended event Set+Wait, uncontended
// Latch, Semaphore and Mailbox round trips, ping-pong through each event kind and through
// Mailbox<int>, a contended Mutex against std::mutex and Boost.Fiber's mutex, and Channel
// throughput against moodycamel's BlockingConcurrentQueue. No main: tc_bench links every
// tests/bench/*Bench.cpp with benchmark_main.

#include "PingPong.h"
#include "Scaling.h"
#include "WaitQueueForms.h"

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <benchmark/benchmark.h>
#include <blockingconcurrentqueue.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

// tests/bench/CMakeLists.txt defines TC_HAVE_BOOST_FIBER when it links Boost.Fiber; the header
// check keeps a stray definition from breaking the build.
#if defined(TC_HAVE_BOOST_FIBER) && __has_include(<boost/fiber/all.hpp>)
#include <boost/fiber/all.hpp>
#define TC_SYNC_BENCH_BOOST_FIBER 1
#else
#define TC_SYNC_BENCH_BOOST_FIBER 0
#endif

namespace
{
using namespace TC::Synchronization;

// ---- uncontended Set + Wait on one thread (never suspends) ----

template <class Event>
void BM_EventSetWait(benchmark::State& state)
{
    Event event;
    for (auto _ : state)
    {
        event.Set();
        event.Wait();
    }
}
BENCHMARK_TEMPLATE(BM_EventSetWait, AutoResetEvent_s);
BENCHMARK_TEMPLATE(BM_EventSetWait, ManualResetEvent_s);
BENCHMARK_TEMPLATE(BM_EventSetWait, AutoResetEvent);
BENCHMARK_TEMPLATE(BM_EventSetWait, ManualResetEvent);

// ---- uncontended opening operation and wait (a Latch's: one fetch_sub and one exchange) ----

void BM_LatchCountDownWait(benchmark::State& state)
{
    for (auto _ : state)
    {
        Latch latch(1);
        latch.CountDown();
        latch.Wait();
    }
}
BENCHMARK(BM_LatchCountDownWait);

void BM_SemaphoreReleaseAcquire(benchmark::State& state)
{
    Semaphore semaphore;
    for (auto _ : state)
    {
        semaphore.Release();
        semaphore.Acquire();
    }
}
BENCHMARK(BM_SemaphoreReleaseAcquire);

void BM_MailboxPutTake(benchmark::State& state)
{
    Mailbox<int> mailbox;
    int sum = 0;
    for (auto _ : state)
    {
        mailbox.Put(1);
        sum += mailbox.Take();
    }
    benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_MailboxPutTake);

// ---- ping-pong: two tasks alternate through a pair of events ----
// range(0) == 1: both tasks on one worker (same thread); 2: two workers (cross thread).

template <class Event>
void ResetIfManual(Event& event)
{
    if constexpr (requires { event.Reset(); } && !std::is_same_v<Event, AutoResetEvent_s> &&
                  !std::is_same_v<Event, AutoResetEvent>)
        event.Reset();
}

template <class Event>
void BM_EventPingPong(benchmark::State& state)
{
    TC::Scheduler scheduler(static_cast<unsigned>(state.range(0)));
    Event ping;
    Event pong;
    std::atomic<bool> stop{false};
    auto ponger = scheduler.Start(
        [&]
        {
            for (;;)
            {
                ping.Wait();
                ResetIfManual(ping);
                if (stop.load(std::memory_order_relaxed))
                    return;
                pong.Set();
            }
        });
    scheduler
        .Start(
            [&]
            {
                for (auto _ : state)
                {
                    ping.Set();
                    pong.Wait();
                    ResetIfManual(pong);
                }
                stop = true;
                ping.Set();
            })
        .Join();
    ponger.Join();
}
BENCHMARK_TEMPLATE(BM_EventPingPong, AutoResetEvent_s)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_EventPingPong, ManualResetEvent_s)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_EventPingPong, AutoResetEvent)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_EventPingPong, ManualResetEvent)->Arg(1)->Arg(2)->UseRealTime();

// ---- ping-pong through two Mailbox<int>: an item is one round trip ----
// The library's own single-value handoff (BM_PingPongSameThread runs the guide's Mailbox).
// range(0) == 1 or 2: both tasks on a scheduler of that many workers; 0: client and server on
// two one-worker schedulers, as BM_PingPongCrossThread.

void BM_MailboxPingPong(benchmark::State& state)
{
    const bool crossThread = state.range(0) == 0;
    TC::Scheduler scheduler(crossThread ? 1u : static_cast<unsigned>(state.range(0)));
    std::optional<TC::Scheduler> serverScheduler;
    if (crossThread)
        serverScheduler.emplace(1u);
    TCBench::RunPingPong<Mailbox<int>>(state, scheduler,
                                       crossThread ? *serverScheduler : scheduler);
}
BENCHMARK(BM_MailboxPingPong)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

// ---- contended mutex: 4 tasks on 2 workers, each locking kOps times ----

constexpr int kMutexTasks = 4;
constexpr int kMutexOps = 10000;

template <class Lockable>
void ContendedWorkload(Lockable& lock, std::int64_t& counter)
{
    for (int i = 0; i < kMutexOps; ++i)
    {
        std::lock_guard guard(lock);
        ++counter;
    }
}

// Runs `tasks` tasks on a scheduler of `workers` workers, each locking `lock` kMutexOps times;
// an item is one lock and unlock.
template <class Lockable>
void RunContended(benchmark::State& state, unsigned workers, int tasks)
{
    TC::Scheduler scheduler(workers);
    Lockable lock;
    std::int64_t counter = 0;
    std::vector<TC::JoinHandle> handles(static_cast<std::size_t>(tasks));
    for (auto _ : state)
    {
        for (auto& handle : handles)
            handle = scheduler.Start([&] { ContendedWorkload(lock, counter); });
        for (auto& handle : handles)
            handle.Join();
    }
    benchmark::DoNotOptimize(counter);
    state.SetItemsProcessed(state.iterations() * tasks * kMutexOps);
}

void BM_MutexContended(benchmark::State& state)
{
    RunContended<Mutex>(state, 2, kMutexTasks);
}
BENCHMARK(BM_MutexContended)->UseRealTime();

// The same workload on the library's Mutex written on WaitQueue (WaitQueueForms.h).
void BM_MutexContendedOnWaitQueue(benchmark::State& state)
{
    RunContended<TCBench::WaitQueueMutex>(state, 2, kMutexTasks);
}
BENCHMARK(BM_MutexContendedOnWaitQueue)->UseRealTime();

// The same workload, the tasks taking a std::mutex (which blocks their worker thread).
void BM_StdMutexContended(benchmark::State& state)
{
    RunContended<std::mutex>(state, 2, kMutexTasks);
}
BENCHMARK(BM_StdMutexContended)->UseRealTime();

// BM_ScalingMutexContended_*: twice as many tasks as range(0) workers (threads, for Boost.Fiber),
// all on one lock: how a contended lock's throughput holds up as cores are added.
void BM_ScalingMutexContended_TC(benchmark::State& state)
{
    const auto workers = static_cast<unsigned>(state.range(0));
    RunContended<Mutex>(state, workers, 2 * static_cast<int>(workers));
}
BENCHMARK(BM_ScalingMutexContended_TC)->Apply(TCBench::WorkerCounts)->UseRealTime();

void BM_ScalingMutexContended_Std(benchmark::State& state)
{
    const auto workers = static_cast<unsigned>(state.range(0));
    RunContended<std::mutex>(state, workers, 2 * static_cast<int>(workers));
}
BENCHMARK(BM_ScalingMutexContended_Std)->Apply(TCBench::WorkerCounts)->UseRealTime();

#if TC_SYNC_BENCH_BOOST_FIBER
// The same workload in Boost.Fiber: `fiberCount` fibers over `threads` threads sharing work
// (shared_work). Every thread is fresh: a thread's scheduling algorithm cannot be changed back
// once installed, so the benchmark's own thread is left alone and the timed loop runs on the first
// pool thread while the others lend themselves to the shared queue until it is done.
void RunBoostFiberContended(benchmark::State& state, int threads, int fiberCount)
{
    boost::fibers::mutex mutex;
    std::int64_t counter = 0;
    std::atomic<int> joined{0};
    std::atomic<bool> quit{false};
    std::vector<std::thread> helpers;
    for (int i = 1; i < threads; ++i)
        helpers.emplace_back(
            [&]
            {
                boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
                joined.fetch_add(1);
                // Lets shared_work hand it fibers until the timed thread is done.
                while (!quit.load())
                    boost::this_fiber::yield();
            });
    std::thread timed(
        [&]
        {
            boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
            while (joined.load() != threads - 1)
                std::this_thread::yield();
            for (auto _ : state)
            {
                std::vector<boost::fibers::fiber> fibers;
                for (int t = 0; t < fiberCount; ++t)
                    fibers.emplace_back([&] { ContendedWorkload(mutex, counter); });
                for (auto& fiber : fibers)
                    fiber.join();
            }
            quit = true;
        });
    timed.join();
    for (std::thread& helper : helpers)
        helper.join();
    benchmark::DoNotOptimize(counter);
    state.SetItemsProcessed(state.iterations() * fiberCount * kMutexOps);
}

void BM_BoostFiberMutexContended(benchmark::State& state)
{
    RunBoostFiberContended(state, 2, kMutexTasks);
}
BENCHMARK(BM_BoostFiberMutexContended)->UseRealTime();

void BM_ScalingMutexContended_BoostFiber(benchmark::State& state)
{
    const auto threads = static_cast<int>(state.range(0));
    RunBoostFiberContended(state, threads, 2 * threads);
}
BENCHMARK(BM_ScalingMutexContended_BoostFiber)->Apply(TCBench::WorkerCounts)->UseRealTime();
#endif

// ---- channel throughput: one producer (a thread, or a task), one consumer thread ----

constexpr int kChannelItems = 100000;

// Sends kChannelItems values through a channel of range(0) slots (0: unbounded) to a consumer
// thread; `produce(send)` runs the sending loop `send` where the row's producer lives.
template <class Produce>
void RunChannelThroughput(benchmark::State& state, Produce produce)
{
    const auto capacity = static_cast<std::size_t>(state.range(0));
    for (auto _ : state)
    {
        Channel<std::int64_t> channel(capacity);
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                // Summed in a register and stored once: `sum` is on the producer's stack, next
                // to what its calls push, and a store per value would share that line.
                std::int64_t local = 0;
                for (int i = 0; i < kChannelItems; ++i)
                    local += *channel.Receive();
                sum = local;
            });
        produce(
            [&channel]
            {
                for (int i = 0; i < kChannelItems; ++i)
                    channel.Send(i);
            });
        consumer.join();
        if (!TCBench::Expect(state, sum == std::int64_t{kChannelItems} * (kChannelItems - 1) / 2,
                             "values lost"))
            return;
    }
    state.SetItemsProcessed(state.iterations() * kChannelItems);
}

void BM_ChannelThroughput(benchmark::State& state)
{
    RunChannelThroughput(state, [](auto send) { send(); });
}
BENCHMARK(BM_ChannelThroughput)->Arg(0)->Arg(1024)->UseRealTime();

// The producer is a task on a one-worker scheduler with nothing else to run: what a full
// bounded channel costs a task sender, which spins for room like a thread only while its worker
// has nothing else queued, and otherwise suspends.
void BM_ChannelThroughputFromTask(benchmark::State& state)
{
    TC::Scheduler scheduler(1u);
    RunChannelThroughput(state, [&scheduler](auto send) { scheduler.Start(send).Join(); });
}
BENCHMARK(BM_ChannelThroughputFromTask)->Arg(0)->Arg(1024)->UseRealTime();

// A timed receive on an empty channel, from a thread, with a timeout of range(0) ns: an item is
// one call, which returns TimedOut. A timeout shorter than a waiter's spin should bound the call.
void BM_ChannelReceiveTimesOut(benchmark::State& state)
{
    TC::EnableTimers(); // without it a timed wait has no limit
    Channel<std::int64_t> channel;
    const auto timeout = TC::Duration::FromNanoseconds(state.range(0));
    std::int64_t value = 0;
    bool allTimedOut = true;
    for (auto _ : state)
        allTimedOut &= channel.Receive(value, timeout) == ChannelStatus::TimedOut;
    if (TCBench::Expect(state, allTimedOut, "a receive from an empty channel did not time out"))
        state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ChannelReceiveTimesOut)->Arg(0)->Arg(1000)->UseRealTime();

void BM_MoodycamelBlockingQueueThroughput(benchmark::State& state)
{
    for (auto _ : state)
    {
        moodycamel::BlockingConcurrentQueue<std::int64_t> queue;
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                std::int64_t value = 0;
                std::int64_t local = 0; // as BM_ChannelThroughput's
                for (int i = 0; i < kChannelItems; ++i)
                {
                    queue.wait_dequeue(value);
                    local += value;
                }
                sum = local;
            });
        for (int i = 0; i < kChannelItems; ++i)
            queue.enqueue(i);
        consumer.join();
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(state.iterations() * kChannelItems);
}
BENCHMARK(BM_MoodycamelBlockingQueueThroughput)->UseRealTime();
} // namespace
