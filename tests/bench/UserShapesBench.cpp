// UserShapesBench: ConcurrentTasks' side of the rows written the way a user writes them, with no
// batching and no single-worker shortcut -- a burst of tasks started from a plain thread onto two
// workers and joined, a same-thread ping-pong through the multi-waiter AutoResetEvent, and the
// skynet tree where every node starts its ten children and then joins them (stackful tasks and
// Task<T> coroutines). The peers' rows of the same workloads are under peers/ (TooManyCooks,
// marl, oneTBB, Boost.Fiber); names follow BM_<Workload>_<Impl>.

#include "peers/Measure.h"

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization.h>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace
{
namespace Sync = TC::Synchronization;

// ---------------------------------------------------------------------------------------------
// BurstSpawn/N: the benchmark's own thread (a plain thread, no task) starts N empty tasks on a
// two-worker scheduler, then waits for all of them; an item is one task started, run and joined.

// With one WaitGroup: each task is detached and counts the group down; the thread waits once.
void BM_BurstSpawn_TC(benchmark::State& state)
{
    const auto count = state.range(0);
    TC::Scheduler scheduler(2u);
    for (auto _ : state)
    {
        Sync::WaitGroup done(count);
        for (std::int64_t i = 0; i < count; ++i)
            scheduler.Start([&done] { done.Done(); }).Detach();
        done.Wait();
    }
    TCBench::ReportItems(state, count);
}
BENCHMARK(BM_BurstSpawn_TC)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// With a JoinHandle per task, joined in the order started.
void BM_BurstSpawnJoinHandles_TC(benchmark::State& state)
{
    const auto count = static_cast<std::size_t>(state.range(0));
    TC::Scheduler scheduler(2u);
    std::vector<TC::JoinHandle> handles(count);
    std::atomic<std::int64_t> ran{0};
    for (auto _ : state)
    {
        for (TC::JoinHandle& handle : handles)
            handle = scheduler.Start([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        for (TC::JoinHandle& handle : handles)
            handle.Join();
    }
    if (TCBench::Expect(state, ran.load() == state.iterations() * state.range(0), "tasks lost"))
        TCBench::ReportItems(state, state.range(0));
}
BENCHMARK(BM_BurstSpawnJoinHandles_TC)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// EventPingPongMulti: two tasks on one worker alternate through two AutoResetEvents (the
// multi-waiter kind a user reaches for first); an item is one round trip.
void BM_EventPingPongMulti_TC(benchmark::State& state)
{
    TC::Scheduler scheduler(1u);
    Sync::AutoResetEvent ping;
    Sync::AutoResetEvent pong;
    bool stop = false; // both tasks run on the one worker
    TC::JoinHandle ponger = scheduler.Start(
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
    scheduler
        .Start(
            [&]
            {
                for (auto _ : state)
                {
                    ping.Set();
                    pong.Wait();
                }
                stop = true;
                ping.Set();
            })
        .Join();
    ponger.Join();
    TCBench::ReportItems(state, 1);
}
BENCHMARK(BM_EventPingPongMulti_TC)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// SkynetNatural/N: the skynet tree over N leaves on two workers, every node starting its ten
// children and then joining them, at every level; an item is one task (all nodes but the root).
// A task's stack is taken when it first runs, so the tasks alive at once are the suspended inner
// nodes (N/9 of them) and those running: the default guarded stacks fit under vm.max_map_count
// for N = 100 000.
constexpr std::int64_t kNaturalLeaves = 100'000;

constexpr std::int64_t SkynetTasks(std::int64_t leaves)
{
    std::int64_t tasks = 0;
    for (std::int64_t level = leaves; level >= 1; level /= 10)
        tasks += level;
    return tasks - 1;
}

std::int64_t SkynetTask(TC::Scheduler& scheduler, std::int64_t num, std::int64_t size)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    std::array<TC::JoinHandle, 10> children;
    for (int i = 0; i < 10; ++i)
        children[static_cast<std::size_t>(i)] = scheduler.Start(
            [&scheduler, &results, num, childSize, i] {
                results[static_cast<std::size_t>(i)] =
                    SkynetTask(scheduler, num + i * childSize, childSize);
            });
    for (TC::JoinHandle& child : children)
        child.Join();
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void BM_SkynetNatural_TC(benchmark::State& state)
{
    const std::int64_t leaves = state.range(0);
    TC::Scheduler scheduler(2u);
    bool ok = true;
    for (auto _ : state)
    {
        std::int64_t sum = 0;
        scheduler.Start([&] { sum = SkynetTask(scheduler, 0, leaves); }).Join();
        ok &= sum == leaves * (leaves - 1) / 2;
    }
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, SkynetTasks(leaves));
}
BENCHMARK(BM_SkynetNatural_TC)->Arg(kNaturalLeaves)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same tree in Task<T> coroutines: each node moves itself onto the scheduler (the guide's
// way to make children run in parallel) and awaits its ten children with WhenAll.
TC::Strands::Task<void> SkynetCoroutine(TC::Scheduler* scheduler, std::int64_t num, std::int64_t size,
                               std::int64_t* out)
{
    co_await scheduler->Schedule();
    if (size == 1)
    {
        *out = num;
        co_return;
    }
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    std::vector<TC::Strands::Task<void>> children;
    children.reserve(10);
    for (int i = 0; i < 10; ++i)
        children.push_back(SkynetCoroutine(scheduler, num + i * childSize, childSize,
                                           &results[static_cast<std::size_t>(i)]));
    co_await TC::Strands::WhenAll(std::move(children));
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    *out = sum;
}

TC::Strands::DetachedTask DriveSkynet(TC::Scheduler* scheduler, std::int64_t leaves, std::int64_t* out,
                             Sync::Latch* done)
{
    co_await SkynetCoroutine(scheduler, 0, leaves, out);
    done->CountDown();
}

void BM_SkynetNaturalCoroutine_TC(benchmark::State& state)
{
    const std::int64_t leaves = state.range(0);
    TC::Scheduler scheduler(2u);
    bool ok = true;
    for (auto _ : state)
    {
        std::int64_t sum = 0;
        Sync::Latch done(1);
        DriveSkynet(&scheduler, leaves, &sum, &done);
        done.Wait();
        ok &= sum == leaves * (leaves - 1) / 2;
    }
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, SkynetTasks(leaves));
}
BENCHMARK(BM_SkynetNaturalCoroutine_TC)
    ->Arg(kNaturalLeaves)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
} // namespace
