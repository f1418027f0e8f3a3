// oneTBB peer: spawn-and-join and skynet with tbb::task_group, the way a TBB user writes them,
// and the two ping-pong rows with resumable tasks (tbb::task::suspend / resume). task_group tasks
// are stackless and run to completion, so a waiting parent helps run its children (LIFO) instead
// of switching stacks; a suspended task keeps its stack and the thread goes on on another one.

#include "Measure.h"
#include "Scaling.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <semaphore>
#include <vector>

namespace
{
// BM_SpawnJoinOneWorker_TBB: in an arena of one thread (as ConcurrentTasks' row uses one worker), a
// task_group runs 1000 empty tasks and waits for them; an item is one task. Each counts itself
// in a plain integer, as in the other rows: the arena's one thread runs them all.
constexpr int kSpawnBatch = 1000;

void BM_SpawnJoinOneWorker_TBB(benchmark::State& state)
{
    tbb::task_arena arena(1);
    std::int64_t ran = 0;
    arena.execute(
        [&]
        {
            for (auto _ : state)
            {
                tbb::task_group group;
                for (int i = 0; i < kSpawnBatch; ++i)
                    group.run([&ran] { ++ran; });
                group.wait();
            }
        });
    if (TCBench::Expect(state, ran == state.iterations() * kSpawnBatch, "tasks lost"))
        TCBench::ReportItems(state, kSpawnBatch);
}
BENCHMARK(BM_SpawnJoinOneWorker_TBB)->UseRealTime();

// BurstSpawn/N: the benchmark's thread runs a task_group of N empty tasks in an arena of two
// threads and waits for it; an item is one task.
void BM_BurstSpawn_TBB(benchmark::State& state)
{
    tbb::task_arena arena(2);
    std::atomic<std::int64_t> ran{0};
    arena.execute(
        [&]
        {
            for (auto _ : state)
            {
                tbb::task_group group;
                for (std::int64_t i = 0; i < state.range(0); ++i)
                    group.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
                group.wait();
            }
        });
    if (TCBench::Expect(state, ran.load() == state.iterations() * state.range(0), "tasks lost"))
        TCBench::ReportItems(state, state.range(0));
}
BENCHMARK(BM_BurstSpawn_TBB)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// Skynet: every node runs its ten children in a task_group and waits -- the way a oneTBB user
// writes it, and depth first in effect, since a waiting parent runs its own children (LIFO)
// first. Two threads (the machine's cores); an item is one task. BM_SkynetDepthFirst_TBB has
// 1 000 000 leaves, BM_SkynetNatural_TBB range(0).
constexpr std::int64_t kSkynetLeaves = 1'000'000;

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

void RunSkynet(benchmark::State& state, int threads, std::int64_t leaves = kSkynetLeaves)
{
    tbb::task_arena arena(threads);
    bool ok = true;
    arena.execute(
        [&]
        {
            for (auto _ : state)
                ok &= Skynet(0, leaves) == leaves * (leaves - 1) / 2;
        });
    std::int64_t tasks = 0;
    for (std::int64_t level = leaves; level >= 1; level /= 10)
        tasks += level;
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, tasks - 1);
}

void BM_SkynetDepthFirst_TBB(benchmark::State& state)
{
    RunSkynet(state, 2);
}
BENCHMARK(BM_SkynetDepthFirst_TBB)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SkynetNatural_TBB(benchmark::State& state)
{
    RunSkynet(state, 2, state.range(0));
}
BENCHMARK(BM_SkynetNatural_TBB)->Arg(100'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_ScalingSkynet_TBB: the same tree in an arena of range(0) threads.
void BM_ScalingSkynet_TBB(benchmark::State& state)
{
    RunSkynet(state, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_ScalingSkynet_TBB)
    ->Apply(TCBench::WorkerCounts)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if __TBB_RESUMABLE_TASKS
// ---------------------------------------------------------------------------------------------
// Ping-pong with resumable tasks: the same single-waiter handoff ConcurrentTasks' rows use (a
// value slot and one waiter slot, published, then re-checked), written with oneTBB's suspend
// points. resume() hands the task back to its arena; it runs when a thread of that arena next
// looks for work.
class SuspendPointMailbox
{
public:
    void Put(int value)
    {
        value_ = value;
        full_.store(true); // seq_cst: ordered before the waiter read, as Take's re-check needs
        if (tbb::task::suspend_point waiter = waiter_.exchange(nullptr))
            tbb::task::resume(waiter);
    }

    int Take()
    {
        while (!full_.load())
            tbb::task::suspend(
                [this](tbb::task::suspend_point self)
                {
                    waiter_.store(self);
                    // Re-check after publishing: a Put that ran before the store found no waiter.
                    if (full_.load())
                        if (tbb::task::suspend_point waiter = waiter_.exchange(nullptr))
                            tbb::task::resume(waiter);
                });
        full_.store(false);
        return value_;
    }

private:
    int value_ = 0;
    std::atomic<bool> full_{false};
    std::atomic<tbb::task::suspend_point> waiter_{nullptr};
};

void ServeTbb(SuspendPointMailbox& requests, SuspendPointMailbox& replies)
{
    for (;;)
    {
        const int request = requests.Take();
        if (request < 0)
            return;
        replies.Put(request + 1);
    }
}

void PingPongClientTbb(benchmark::State& state, SuspendPointMailbox& requests,
                       SuspendPointMailbox& replies, bool& ok, std::atomic<std::int64_t>& rounds)
{
    std::int64_t done = 0;
    for (auto _ : state)
    {
        requests.Put(1);
        ok &= replies.Take() == 2;
        rounds.store(++done, std::memory_order_relaxed); // for the watchdog only
    }
    requests.Put(-1);
}

// Runs `body` as a task on `arena` (one worker thread, no slot for this thread) and returns a
// semaphore the task releases when done.
template <class Body>
void EnqueueCounted(tbb::task_arena& arena, std::counting_semaphore<2>& done, Body body)
{
    arena.enqueue(
        [&done, body]
        {
            body();
            done.release();
        });
}

// Client on `clientArena`, server on `serverArena` (each one worker thread, no slot for this
// thread); an item is one round trip.
void RunPingPongTbb(benchmark::State& state, tbb::task_arena& clientArena,
                    tbb::task_arena& serverArena)
{
    SuspendPointMailbox requests;
    SuspendPointMailbox replies;
    std::counting_semaphore<2> done(0);
    bool ok = true;
    std::atomic<std::int64_t> rounds{0};
    EnqueueCounted(serverArena, done, [&] { ServeTbb(requests, replies); });
    EnqueueCounted(clientArena, done,
                   [&] { PingPongClientTbb(state, requests, replies, ok, rounds); });
    // A watchdog: oneTBB sometimes leaves one of the two arenas without a thread for good (every
    // worker asleep, the ping-pong stopped: oneTBB issues 1822 and 1909, a thread suspended in
    // an arena stays bound to it). Nothing can be unwound then -- the suspended tasks use this
    // frame -- so the process ends with a message; tools/perf-report runs it again.
    std::int64_t seen = -1;
    for (int finished = 0; finished < 2;)
    {
        if (done.try_acquire_for(std::chrono::seconds(10)))
        {
            ++finished;
            continue;
        }
        const std::int64_t now = rounds.load(std::memory_order_relaxed);
        if (now == seen)
        {
            std::fprintf(stderr,
                         "BM_PingPong*_TBB: no round trip in 10 s after %lld: oneTBB left "
                         "an arena without a thread (oneTBB issues 1822, 1909); aborting\n",
                         static_cast<long long>(now));
            std::abort();
        }
        seen = now;
    }
    if (TCBench::Expect(state, ok, "a wrong reply"))
        TCBench::ReportItems(state, 1);
}

// BM_PingPongSameThread_TBB: client and server tasks in one arena with a single worker thread.
void BM_PingPongSameThread_TBB(benchmark::State& state)
{
    tbb::task_arena arena(1, 0);
    RunPingPongTbb(state, arena, arena);
}
BENCHMARK(BM_PingPongSameThread_TBB)->UseRealTime();

// BM_PingPongCrossThread_TBB: the server in a second arena, so every resume hands a task to a
// thread of the other arena. oneTBB's pool has one worker per core but the first: the limit is
// raised so that each arena gets a worker of its own even on two cores (with one worker for both
// arenas the client's arena keeps it and the server never runs).
void BM_PingPongCrossThread_TBB(benchmark::State& state)
{
    tbb::global_control workers(tbb::global_control::max_allowed_parallelism, 3);
    tbb::task_arena clientArena(1, 0);
    tbb::task_arena serverArena(1, 0);
    RunPingPongTbb(state, clientArena, serverArena);
}
BENCHMARK(BM_PingPongCrossThread_TBB)->UseRealTime();
#endif // without resumable tasks (a oneTBB built without them) the two rows are left out
// ParallelFor: tbb::parallel_for with its default (auto) partitioner over 100 000 floats, each
// aged in place (x * 0.99 + 0.01), in an arena of two threads -- the benchmark's thread and one
// worker; an item is one float.
void BM_ParallelFor_TBB(benchmark::State& state)
{
    std::vector<float> values(100'000, 1.0f);
    tbb::task_arena arena(2);
    arena.execute(
        [&]
        {
            for (auto _ : state)
            {
                tbb::parallel_for(tbb::blocked_range<std::size_t>(0, values.size()),
                                  [&values](const tbb::blocked_range<std::size_t>& chunk)
                                  {
                                      for (std::size_t i = chunk.begin(); i < chunk.end(); ++i)
                                          values[i] = values[i] * 0.99f + 0.01f;
                                  });
                benchmark::ClobberMemory();
            }
        });
    if (TCBench::Expect(state, values[0] == values[values.size() - 1], "floats missed"))
        TCBench::ReportItems(state, static_cast<std::int64_t>(values.size()));
}
BENCHMARK(BM_ParallelFor_TBB)->UseRealTime();

// FrameGraph: JobsBench.cpp's shape (1000 jobs; 999, job j after first-level jobs j and j + 1;
// one after all 999) as continue_nodes of a flow graph built once, in an arena of two threads --
// the benchmark's thread and one worker. Each iteration puts a message to every first-level node
// and waits for the graph. An item is one job; `cpu_ns_per_job` as in the ConcurrentTasks row.
void BM_FrameGraph_TBB(benchmark::State& state)
{
    using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;
    using Message = tbb::flow::continue_msg;
    std::vector<std::int64_t> values(2000, 0);
    tbb::task_arena arena(2);
    std::int64_t cpu = 0;
    arena.execute(
        [&]
        {
            tbb::flow::graph graph; // built in the arena: its tasks run there
            std::vector<std::unique_ptr<Node>> first;
            for (std::size_t i = 0; i < 1000; ++i)
                first.push_back(
                    std::make_unique<Node>(graph, [&values, i](const Message&) { ++values[i]; }));
            Node last(graph,
                      [&values](const Message&) { values[1999] = values[1000] + values[1998]; });
            std::vector<std::unique_ptr<Node>> second;
            for (std::size_t j = 0; j < 999; ++j)
            {
                second.push_back(
                    std::make_unique<Node>(graph, [&values, j](const Message&)
                                           { values[1000 + j] = values[j] + values[j + 1]; }));
                tbb::flow::make_edge(*first[j], *second.back());
                tbb::flow::make_edge(*first[j + 1], *second.back());
                tbb::flow::make_edge(*second.back(), last);
            }
            timespec start{};
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
            for (auto _ : state)
            {
                for (auto& node : first)
                    node->try_put(Message());
                graph.wait_for_all();
            }
            timespec end{};
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
            cpu = (end.tv_sec - start.tv_sec) * 1'000'000'000 + (end.tv_nsec - start.tv_nsec);
        });
    if (TCBench::Expect(state, values[1999] == 4 * static_cast<std::int64_t>(state.iterations()),
                        "jobs lost or out of order"))
    {
        TCBench::ReportItems(state, 2000);
        state.counters["cpu_ns_per_job"] =
            static_cast<double>(cpu) / static_cast<double>(state.iterations() * 2000);
    }
}
BENCHMARK(BM_FrameGraph_TBB)->UseRealTime();
} // namespace
