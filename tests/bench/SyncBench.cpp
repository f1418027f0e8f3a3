// SyncBench: the synchronization layer's benchmarks -- uncontended event Set+Wait, ping-pong
// through each event kind, a contended Mutex against std::mutex and Boost.Fiber's mutex, and
// Channel throughput against moodycamel's BlockingConcurrentQueue. No main: tc_bench links every
// tests/bench/*Bench.cpp with benchmark_main.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <benchmark/benchmark.h>
#include <blockingconcurrentqueue.h>

#include <atomic>
#include <cstdint>
#include <mutex>
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

void BM_MutexContended(benchmark::State& state)
{
    TC::Scheduler scheduler(2u);
    Mutex mutex;
    std::int64_t counter = 0;
    for (auto _ : state)
    {
        std::vector<TC::JoinHandle> tasks;
        for (int t = 0; t < kMutexTasks; ++t)
            tasks.push_back(scheduler.Start([&] { ContendedWorkload(mutex, counter); }));
        for (auto& task : tasks)
            task.Join();
    }
    benchmark::DoNotOptimize(counter);
    state.SetItemsProcessed(state.iterations() * kMutexTasks * kMutexOps);
}
BENCHMARK(BM_MutexContended)->UseRealTime();

// The same workload, the tasks taking a std::mutex (which blocks their worker thread).
void BM_StdMutexContended(benchmark::State& state)
{
    TC::Scheduler scheduler(2u);
    std::mutex mutex;
    std::int64_t counter = 0;
    for (auto _ : state)
    {
        std::vector<TC::JoinHandle> tasks;
        for (int t = 0; t < kMutexTasks; ++t)
            tasks.push_back(scheduler.Start([&] { ContendedWorkload(mutex, counter); }));
        for (auto& task : tasks)
            task.Join();
    }
    benchmark::DoNotOptimize(counter);
    state.SetItemsProcessed(state.iterations() * kMutexTasks * kMutexOps);
}
BENCHMARK(BM_StdMutexContended)->UseRealTime();

#if TC_SYNC_BENCH_BOOST_FIBER
// The same workload in Boost.Fiber: 4 fibers over 2 threads sharing work (shared_work). Both
// threads are fresh: a thread's scheduling algorithm cannot be changed back once installed, so
// the benchmark's own thread is left alone and the timed loop runs on the first pool thread.
void BM_BoostFiberMutexContended(benchmark::State& state)
{
    boost::fibers::mutex mutex;
    std::int64_t counter = 0;
    std::atomic<int> joined{0};
    std::atomic<bool> quit{false};
    std::thread helper(
        [&]
        {
            boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
            joined = 1;
            // Lets shared_work hand it fibers until the timed thread is done.
            while (!quit.load())
                boost::this_fiber::yield();
        });
    std::thread timed(
        [&]
        {
            boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
            while (joined.load() == 0)
                std::this_thread::yield();
            for (auto _ : state)
            {
                std::vector<boost::fibers::fiber> fibers;
                for (int t = 0; t < kMutexTasks; ++t)
                    fibers.emplace_back([&] { ContendedWorkload(mutex, counter); });
                for (auto& fiber : fibers)
                    fiber.join();
            }
            quit = true;
        });
    timed.join();
    helper.join();
    benchmark::DoNotOptimize(counter);
    state.SetItemsProcessed(state.iterations() * kMutexTasks * kMutexOps);
}
BENCHMARK(BM_BoostFiberMutexContended)->UseRealTime();
#endif

// ---- channel throughput: one producer thread, one consumer thread ----

constexpr int kChannelItems = 100000;

void BM_ChannelThroughput(benchmark::State& state)
{
    const auto capacity = static_cast<std::size_t>(state.range(0));
    for (auto _ : state)
    {
        Channel<std::int64_t> channel(capacity);
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                for (int i = 0; i < kChannelItems; ++i)
                    sum += *channel.Receive();
            });
        for (int i = 0; i < kChannelItems; ++i)
            channel.Send(i);
        consumer.join();
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(state.iterations() * kChannelItems);
}
BENCHMARK(BM_ChannelThroughput)->Arg(0)->Arg(1024)->UseRealTime();

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
                for (int i = 0; i < kChannelItems; ++i)
                {
                    queue.wait_dequeue(value);
                    sum += value;
                }
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
