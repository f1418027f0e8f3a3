// Boost.Fiber peer: the kernel's workloads written the way a Boost.Fiber user writes them --
// yield, ping-pong through buffered channels on one thread and across threads, a timed pop
// resumed early, spawn-and-join, skynet, memory per suspended fiber and channel throughput
// between two threads. (The contended fibers::mutex row is SyncBench.cpp's
// BM_BoostFiberMutexContended.) Names: BM_<Workload>_BoostFiber, pairing with the
// ConcurrentTasks row of the same workload.
//
// Every row runs on threads it creates: a thread's scheduling algorithm cannot be changed back once
// set, so a row that ran on the benchmark's own thread would leave its choice to every later row
// (SyncBench.cpp's BM_BoostFiberMutexContended installs shared_work there). Single-threaded rows
// use Boost's default round_robin on one fresh thread; multi-threaded rows run on two fresh
// threads that install shared_work (a fiber may then run on either).
//
// Stacks: pooled_fixedsize_stack where one thread creates and ends every fiber (the pool is not
// thread-safe), fixedsize_stack elsewhere; 16 KiB, as ConcurrentTasks' rows where size matters.

#include "Measure.h"

#include <boost/fiber/all.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace
{
namespace fibers = boost::fibers;
using namespace std::chrono_literals;

constexpr std::size_t kStackBytes = 16 * 1024;

// Runs `body` as the main fiber of one fresh thread (round_robin).
template <class Body>
void RunOnFreshThread(Body body)
{
    std::thread thread(body);
    thread.join();
}

// Runs `body` as the main fiber of one fresh thread while a second fresh thread lends its
// processor to the same shared_work queue until `body` returns.
template <class Body>
void RunOnTwoThreads(Body body)
{
    fibers::mutex doneLock;
    fibers::condition_variable doneChanged;
    bool done = false;
    std::atomic<bool> helperReady{false};
    std::thread helper(
        [&]
        {
            fibers::use_scheduling_algorithm<fibers::algo::shared_work>();
            helperReady.store(true, std::memory_order_release);
            std::unique_lock lock(doneLock);
            doneChanged.wait(lock, [&] { return done; }); // runs shared fibers meanwhile
        });
    std::thread main(
        [&]
        {
            fibers::use_scheduling_algorithm<fibers::algo::shared_work>();
            while (!helperReady.load(std::memory_order_acquire))
                std::this_thread::yield();
            body();
            {
                std::unique_lock lock(doneLock);
                done = true;
            }
            doneChanged.notify_all();
        });
    main.join();
    helper.join();
}

// ---------------------------------------------------------------------------------------------
// BM_Yield_BoostFiber: the thread's main fiber and one other alternate with this_fiber::yield;
// an item is one yield.
void BM_Yield_BoostFiber(benchmark::State& state)
{
    RunOnFreshThread(
        [&]
        {
            bool stop = false;
            fibers::fiber other(
                [&stop]
                {
                    while (!stop)
                        boost::this_fiber::yield();
                });
            for (auto _ : state)
                boost::this_fiber::yield();
            stop = true;
            other.join();
        });
    TCBench::ReportItems(state, 2);
}
BENCHMARK(BM_Yield_BoostFiber)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Ping-pong: requests and replies through two buffered channels; an item is one round trip.
using Channel = fibers::buffered_channel<int>;

void ServeChannel(Channel& requests, Channel& replies)
{
    for (int request = 0;
         requests.pop(request) == fibers::channel_op_status::success && request > 0;)
        replies.push(request);
}

enum class ReplyWait : unsigned char
{
    Untimed,
    Timed,
};

void PingPongClient(benchmark::State& state, Channel& requests, Channel& replies, ReplyWait wait)
{
    bool ok = true;
    for (auto _ : state)
    {
        requests.push(1);
        int reply = 0;
        if (wait == ReplyWait::Timed)
            ok &= replies.pop_wait_for(reply, 1s) == fibers::channel_op_status::success;
        else
            ok &= replies.pop(reply) == fibers::channel_op_status::success;
        benchmark::DoNotOptimize(reply);
    }
    requests.push(-1);
    if (TCBench::Expect(state, ok, "a channel pop failed"))
        TCBench::ReportItems(state, 1);
}

void PingPongSameThread(benchmark::State& state, ReplyWait wait)
{
    RunOnFreshThread(
        [&]
        {
            Channel requests(2);
            Channel replies(2);
            fibers::fiber server([&] { ServeChannel(requests, replies); });
            PingPongClient(state, requests, replies, wait);
            server.join();
        });
}

void BM_PingPongSameThread_BoostFiber(benchmark::State& state)
{
    PingPongSameThread(state, ReplyWait::Untimed);
}
BENCHMARK(BM_PingPongSameThread_BoostFiber)->UseRealTime();

void BM_UntimedWait_BoostFiber(benchmark::State& state)
{
    PingPongSameThread(state, ReplyWait::Untimed);
}
BENCHMARK(BM_UntimedWait_BoostFiber)->UseRealTime();

void BM_TimedWaitResumedEarly_BoostFiber(benchmark::State& state)
{
    PingPongSameThread(state, ReplyWait::Timed);
}
BENCHMARK(BM_TimedWaitResumedEarly_BoostFiber)->UseRealTime();

// The server is the main fiber of a second thread (Boost's default round_robin on both): every
// push wakes a fiber that lives on the other thread.
void BM_PingPongCrossThread_BoostFiber(benchmark::State& state)
{
    Channel requests(2);
    Channel replies(2);
    std::thread server([&] { ServeChannel(requests, replies); });
    RunOnFreshThread([&] { PingPongClient(state, requests, replies, ReplyWait::Untimed); });
    server.join();
}
BENCHMARK(BM_PingPongCrossThread_BoostFiber)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SpawnJoinOneWorker_BoostFiber: the main fiber launches 1000 empty fibers, then joins them all;
// an item is one fiber. Pooled stacks: Boost's fastest allocator (all on this one thread).
constexpr int kSpawnBatch = 1000;

void BM_SpawnJoinOneWorker_BoostFiber(benchmark::State& state)
{
    std::int64_t ran = 0;
    RunOnFreshThread(
        [&]
        {
            fibers::pooled_fixedsize_stack stacks(kStackBytes);
            std::vector<fibers::fiber> spawned(kSpawnBatch);
            for (auto _ : state)
            {
                for (fibers::fiber& fiber : spawned)
                    fiber = fibers::fiber(std::allocator_arg, stacks, [&ran] { ++ran; });
                for (fibers::fiber& fiber : spawned)
                    fiber.join();
            }
        });
    if (TCBench::Expect(state, ran == state.iterations() * kSpawnBatch, "fibers lost"))
        TCBench::ReportItems(state, kSpawnBatch);
}
BENCHMARK(BM_SpawnJoinOneWorker_BoostFiber)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SkynetDepthFirst_BoostFiber: the tree of KernelBench.cpp's BM_SkynetDepthFirst_TC, shaped the
// same way: the top two levels launch ten fibers and join them; below, each child is launched with
// launch::dispatch (it runs at once) and joined before the next. Two threads, shared_work.
constexpr std::int64_t kSkynetLeaves = 1'000'000;
constexpr std::int64_t kSkynetTasks = 1'111'110;
constexpr std::int64_t kSkynetSum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;
constexpr int kSkynetFanOutLevels = 2;

std::int64_t Skynet(std::int64_t num, std::int64_t size, int level)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    auto child = [&results, num, childSize, level](int i)
    {
        return [&results, num, childSize, level, i] {
            results[static_cast<std::size_t>(i)] =
                Skynet(num + i * childSize, childSize, level + 1);
        };
    };
    if (level < kSkynetFanOutLevels)
    {
        std::array<fibers::fiber, 10> children;
        for (int i = 0; i < 10; ++i)
            children[static_cast<std::size_t>(i)] =
                fibers::fiber(fibers::launch::post, std::allocator_arg,
                              fibers::fixedsize_stack(kStackBytes), child(i));
        for (fibers::fiber& fiber : children)
            fiber.join();
    }
    else
    {
        for (int i = 0; i < 10; ++i)
            fibers::fiber(fibers::launch::dispatch, std::allocator_arg,
                          fibers::fixedsize_stack(kStackBytes), child(i))
                .join();
    }
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void BM_SkynetDepthFirst_BoostFiber(benchmark::State& state)
{
    bool ok = true;
    RunOnTwoThreads(
        [&]
        {
            for (auto _ : state)
                ok &= Skynet(0, kSkynetLeaves, 0) == kSkynetSum;
        });
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, kSkynetTasks);
}
BENCHMARK(BM_SkynetDepthFirst_BoostFiber)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_SkynetNatural_BoostFiber/N: the tree over N leaves the way a Boost.Fiber user writes it,
// every node launching its ten children (launch::post) and then joining them. Two threads,
// shared_work; an item is one fiber (all but the root).
std::int64_t SkynetNatural(std::int64_t num, std::int64_t size)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    std::array<fibers::fiber, 10> children;
    for (int i = 0; i < 10; ++i)
        children[static_cast<std::size_t>(i)] = fibers::fiber(
            fibers::launch::post, std::allocator_arg, fibers::fixedsize_stack(kStackBytes),
            [&results, num, childSize, i] {
                results[static_cast<std::size_t>(i)] =
                    SkynetNatural(num + i * childSize, childSize);
            });
    for (fibers::fiber& fiber : children)
        fiber.join();
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void BM_SkynetNatural_BoostFiber(benchmark::State& state)
{
    const std::int64_t leaves = state.range(0);
    bool ok = true;
    RunOnTwoThreads(
        [&]
        {
            for (auto _ : state)
                ok &= SkynetNatural(0, leaves) == leaves * (leaves - 1) / 2;
        });
    std::int64_t tasks = 0;
    for (std::int64_t level = leaves; level >= 1; level /= 10)
        tasks += level;
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, tasks - 1);
}
BENCHMARK(BM_SkynetNatural_BoostFiber)->Arg(100'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_BurstSpawnJoinHandles_BoostFiber/N: the main fiber of a two-thread shared_work pool launches
// N empty fibers, then joins each in the order launched; an item is one fiber.
void BM_BurstSpawnJoinHandles_BoostFiber(benchmark::State& state)
{
    const auto count = static_cast<std::size_t>(state.range(0));
    std::atomic<std::int64_t> ran{0};
    RunOnTwoThreads(
        [&]
        {
            std::vector<fibers::fiber> spawned(count);
            for (auto _ : state)
            {
                for (fibers::fiber& fiber : spawned)
                    fiber = fibers::fiber(std::allocator_arg, fibers::fixedsize_stack(kStackBytes),
                                          [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
                for (fibers::fiber& fiber : spawned)
                    fiber.join();
            }
        });
    if (TCBench::Expect(state, ran.load() == state.iterations() * state.range(0), "fibers lost"))
        TCBench::ReportItems(state, state.range(0));
}
BENCHMARK(BM_BurstSpawnJoinHandles_BoostFiber)
    ->Arg(200'000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// BM_EventPingPongMulti_BoostFiber: Boost.Fiber has no event; its auto-reset event is a flag
// under a fibers::mutex with a condition_variable any number of fibers may wait on. Two fibers
// on one thread alternate through two of them; an item is one round trip.
class AutoResetEvent
{
public:
    void Set()
    {
        {
            std::unique_lock guard(lock_);
            set_ = true;
        }
        changed_.notify_one();
    }
    void Wait()
    {
        std::unique_lock guard(lock_);
        changed_.wait(guard, [this] { return set_; });
        set_ = false;
    }

private:
    fibers::mutex lock_;
    fibers::condition_variable changed_;
    bool set_ = false;
};

void BM_EventPingPongMulti_BoostFiber(benchmark::State& state)
{
    RunOnFreshThread(
        [&]
        {
            AutoResetEvent ping;
            AutoResetEvent pong;
            bool stop = false;
            fibers::fiber ponger(
                [&]
                {
                    for (;;)
                    {
                        ping.Wait();
                        if (stop)
                            return;
                        pong.Set();
                    }
                });
            for (auto _ : state)
            {
                ping.Set();
                pong.Wait();
            }
            stop = true;
            ping.Set();
            ponger.join();
        });
    TCBench::ReportItems(state, 1);
}
BENCHMARK(BM_EventPingPongMulti_BoostFiber)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_TaskMemory_BoostFiber: resident memory per fiber suspended on a condition variable, over
// 100 000 fibers with 16 KiB stacks (fixedsize_stack: malloc'd, no guard page).
constexpr std::size_t kParkedCount = 100'000;

void BM_TaskMemory_BoostFiber(benchmark::State& state)
{
    double bytesPerFiber = 0;
    RunOnFreshThread(
        [&]
        {
            for (auto _ : state)
            {
                std::vector<fibers::fiber> parked;
                parked.reserve(kParkedCount);
                fibers::mutex lock;
                fibers::condition_variable released;
                bool go = false;
                std::size_t waiting = 0;
                const std::int64_t before = TCBench::ResidentBytesAfterTrim();
                for (std::size_t i = 0; i < kParkedCount; ++i)
                    parked.emplace_back(std::allocator_arg, fibers::fixedsize_stack(kStackBytes),
                                        [&]
                                        {
                                            std::unique_lock guard(lock);
                                            ++waiting;
                                            released.wait(guard, [&] { return go; });
                                        });
                while (waiting < kParkedCount)
                    boost::this_fiber::yield();
                const std::int64_t after = TCBench::ResidentBytes();
                bytesPerFiber += static_cast<double>(after - before) / kParkedCount;
                {
                    std::unique_lock guard(lock);
                    go = true;
                }
                released.notify_all();
                for (fibers::fiber& fiber : parked)
                    fiber.join();
            }
        });
    TCBench::ReportBytesPerItem(state, bytesPerFiber);
}
BENCHMARK(BM_TaskMemory_BoostFiber)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// BM_ChannelThroughput_BoostFiber: one thread pushes into a buffered_channel of range(0) slots, a
// second thread pops; an item is one value through the channel.
void BM_ChannelThroughput_BoostFiber(benchmark::State& state)
{
    fibers::buffered_channel<std::int64_t> channel(static_cast<std::size_t>(state.range(0)));
    std::int64_t received = 0;
    std::thread consumer(
        [&]
        {
            std::int64_t value = 0;
            while (channel.pop(value) == fibers::channel_op_status::success)
                ++received;
        });
    std::int64_t sent = 0;
    RunOnFreshThread(
        [&]
        {
            for (auto _ : state)
                channel.push(sent++);
            channel.close();
        });
    consumer.join();
    if (TCBench::Expect(state, received == sent, "channel: values lost"))
        TCBench::ReportItems(state, 1);
}
// Capacity 1024, as SyncBench.cpp's BM_ChannelThroughput/1024 (a buffered_channel is bounded).
BENCHMARK(BM_ChannelThroughput_BoostFiber)->Arg(1024)->UseRealTime();
} // namespace
