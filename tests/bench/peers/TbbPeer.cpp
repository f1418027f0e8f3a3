// oneTBB peer: spawn-and-join and skynet with tbb::task_group, the way a TBB user writes them.
// TBB tasks are stackless and run to completion, so a waiting parent helps run its children
// (LIFO) instead of switching stacks.

#include "Measure.h"

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>

namespace
{
// BM_SpawnJoin_TBB: in an arena of one thread (as ConcurrentTasks' row uses one worker), a
// task_group runs 1000 empty tasks and waits for them; an item is one task.
constexpr int kSpawnBatch = 1000;

void BM_SpawnJoin_TBB(benchmark::State& state)
{
    tbb::task_arena arena(1);
    std::atomic<std::int64_t> ran{0};
    arena.execute(
        [&]
        {
            for (auto _ : state)
            {
                tbb::task_group group;
                for (int i = 0; i < kSpawnBatch; ++i)
                    group.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
                group.wait();
            }
        });
    if (TCBench::Expect(state, ran.load() == state.iterations() * kSpawnBatch, "tasks lost"))
        TCBench::ReportItems(state, kSpawnBatch);
}
BENCHMARK(BM_SpawnJoin_TBB)->UseRealTime();

// BM_Skynet_TBB: 1 000 000 leaves, every node runs its ten children in a task_group and waits;
// two threads (the machine's cores); an item is one task.
constexpr std::int64_t kSkynetLeaves = 1'000'000;
constexpr std::int64_t kSkynetTasks = 1'111'110;
constexpr std::int64_t kSkynetSum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;

std::int64_t Skynet(std::int64_t num, std::int64_t size)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    tbb::task_group group;
    for (int i = 0; i < 10; ++i)
        group.run(
            [&results, num, childSize, i]
            { results[static_cast<std::size_t>(i)] = Skynet(num + i * childSize, childSize); });
    group.wait();
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void BM_Skynet_TBB(benchmark::State& state)
{
    tbb::task_arena arena(2);
    bool ok = true;
    arena.execute(
        [&]
        {
            for (auto _ : state)
                ok &= Skynet(0, kSkynetLeaves) == kSkynetSum;
        });
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, kSkynetTasks);
}
BENCHMARK(BM_Skynet_TBB)->UseRealTime()->Unit(benchmark::kMillisecond);
} // namespace
