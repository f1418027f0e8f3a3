// JobsBench: the job-system shapes of an engine's frame -- a batch of jobs submitted from the main
// thread as one bulk start or as single starts, the burst of tasks started as one bulk, a
// ParallelFor over 100 000 floats (oneTBB's parallel_for is its peer, peers/TbbPeer.cpp) and a
// frame's job graph (oneTBB's flow graph is its peer).
// Names follow BM_<Workload>_<Impl>.

#include "peers/Measure.h"

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <vector>

namespace
{
namespace Sync = TC::Synchronization;

// CPU time of the calling thread, in nanoseconds: what a submission costs the frame's thread
// whether or not the loaded machine preempts it.
std::int64_t ThreadCpuNanoseconds() noexcept
{
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// CPU time of every thread of the process, in nanoseconds.
std::int64_t ProcessCpuNanoseconds() noexcept
{
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// HostStartEach/N and HostStartBulk/N: the benchmark's own thread (a plain thread, as a game's
// main thread) submits N jobs to a two-worker scheduler and keeps their JoinHandles; the time is
// the submission's alone (manual time, wall clock), the joins come after it, untimed. An item
// is one job submitted. `start_cpu_ns` is the submitting thread's CPU time per job.
template <class Submit>
void HostSubmission(benchmark::State& state, Submit submit)
{
    const auto count = static_cast<std::size_t>(state.range(0));
    TC::Scheduler scheduler(2u);
    std::atomic<std::int64_t> ran{0};
    std::vector<TC::JoinHandle> handles;
    handles.reserve(count);
    std::int64_t cpu = 0;
    for (auto _ : state)
    {
        const auto wallStart = std::chrono::steady_clock::now();
        const std::int64_t cpuStart = ThreadCpuNanoseconds();
        submit(scheduler, count, ran, handles);
        cpu += ThreadCpuNanoseconds() - cpuStart;
        state.SetIterationTime(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count());
        for (TC::JoinHandle& handle : handles)
            handle.Join();
        handles.clear();
    }
    const auto jobs = state.iterations() * static_cast<std::int64_t>(count);
    if (TCBench::Expect(state, ran.load() == jobs, "jobs lost"))
    {
        TCBench::ReportItems(state, static_cast<std::int64_t>(count));
        state.counters["start_cpu_ns"] = static_cast<double>(cpu) / static_cast<double>(jobs);
    }
}

void BM_HostStartEach_TC(benchmark::State& state)
{
    HostSubmission(state,
                   [](TC::Scheduler& scheduler, std::size_t count, std::atomic<std::int64_t>& ran,
                      std::vector<TC::JoinHandle>& handles)
                   {
                       for (std::size_t i = 0; i < count; ++i)
                           handles.push_back(scheduler.Start(
                               [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }));
                   });
}
BENCHMARK(BM_HostStartEach_TC)->Arg(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_HostStartBulk_TC(benchmark::State& state)
{
    HostSubmission(state,
                   [](TC::Scheduler& scheduler, std::size_t count, std::atomic<std::int64_t>& ran,
                      std::vector<TC::JoinHandle>& handles)
                   {
                       handles = scheduler.StartBulk(
                           count, [&ran](std::size_t) { ran.fetch_add(1, std::memory_order_relaxed); });
                   });
}
BENCHMARK(BM_HostStartBulk_TC)->Arg(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);

// BurstSpawnBulk/N: BurstSpawn's shape (N empty tasks from a plain thread onto two workers, then
// waiting for all of them on one WaitGroup) with the tasks started as detached bulk starts of
// 2000 -- a size whose blocks the pools hold, so each slice reuses the blocks of tasks that
// ended (one bulk start of all N would hold N blocks at once). An item is one task started, run
// and counted down.
void BM_BurstSpawnBulk_TC(benchmark::State& state)
{
    constexpr std::int64_t kSlice = 2000;
    const auto count = state.range(0);
    TC::Scheduler scheduler(2u);
    for (auto _ : state)
    {
        Sync::WaitGroup done(count);
        for (std::int64_t started = 0; started < count; started += kSlice)
            scheduler.StartBulkDetached(static_cast<std::size_t>(std::min(kSlice, count - started)),
                                        [&done](std::size_t) { done.Done(); });
        done.Wait();
    }
    TCBench::ReportItems(state, count);
}
BENCHMARK(BM_BurstSpawnBulk_TC)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);
// ParallelFor: 100 000 floats, each aged in place (x * 0.99 + 0.01), by ParallelFor with its
// automatic grain, called from the benchmark's thread onto a one-worker scheduler -- two threads,
// as oneTBB's arena of two in its row; an item is one float.
void BM_ParallelFor_TC(benchmark::State& state)
{
    std::vector<float> values(100'000, 1.0f);
    TC::Scheduler scheduler(1u);
    for (auto _ : state)
    {
        TC::ParallelFor(scheduler, {0, values.size()}, 0,
                        [&values](TC::IndexRange chunk)
                        {
                            for (std::size_t i = chunk.begin; i < chunk.end; ++i)
                                values[i] = values[i] * 0.99f + 0.01f;
                        });
        benchmark::ClobberMemory();
    }
    if (TCBench::Expect(state, values[0] == values[values.size() - 1], "floats missed"))
        TCBench::ReportItems(state, static_cast<std::int64_t>(values.size()));
}
BENCHMARK(BM_ParallelFor_TC)->UseRealTime();

// FrameGraph: a three-level graph of 2000 small jobs, built once and run once per iteration from
// the benchmark's thread onto a two-worker scheduler: 1000 jobs each add one to their own value;
// 999 jobs, job j after first-level jobs j and j + 1, each sum those two values; one last job,
// after all 999, sums the first and last of them. An item is one job. `cpu_ns_per_job` is the
// process's CPU time per job (every thread's, spinning included), which the machine's other load
// moves less than the wall time. TbbPeer.cpp's row has the same shape.
void BM_FrameGraph_TC(benchmark::State& state)
{
    std::vector<std::int64_t> values(2000, 0);
    TC::JobGraph graph;
    std::vector<TC::JobGraph::Node> first;
    for (std::size_t i = 0; i < 1000; ++i)
        first.push_back(graph.Add([&values, i] { ++values[i]; }));
    TC::JobGraph::Node last = graph.Add([&values] { values[1999] = values[1000] + values[1998]; });
    for (std::size_t j = 0; j < 999; ++j)
    {
        TC::JobGraph::Node second =
            graph.Add([&values, j] { values[1000 + j] = values[j] + values[j + 1]; });
        graph.Precede(first[j], second);
        graph.Precede(first[j + 1], second);
        graph.Precede(second, last);
    }
    TC::Scheduler scheduler(2u);
    const std::int64_t cpuStart = ProcessCpuNanoseconds();
    for (auto _ : state)
        graph.Run(scheduler);
    const std::int64_t cpu = ProcessCpuNanoseconds() - cpuStart;
    if (TCBench::Expect(state, values[1999] == 4 * static_cast<std::int64_t>(state.iterations()),
                        "jobs lost or out of order"))
    {
        TCBench::ReportItems(state, 2000);
        state.counters["cpu_ns_per_job"] =
            static_cast<double>(cpu) / static_cast<double>(state.iterations() * 2000);
    }
}
BENCHMARK(BM_FrameGraph_TC)->UseRealTime();
} // namespace
