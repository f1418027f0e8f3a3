// TooManyCooks peer: the workloads written the way a TooManyCooks user writes them -- tmc::task
// coroutines on a tmc::ex_cpu thread pool, spawn_many to start and join many, auto_reset_event,
// tmc::mutex and tmc::channel. Built only where tools/perf-report found the upstream source
// (tests/bench/CMakeLists.txt, TC_PEER_SRC); this file is the one translation unit that defines
// TMC_IMPL. Names: BM_<Workload>_TMC, pairing with the ConcurrentTasks row of the same workload.
//
// Every row builds its own ex_cpu with the thread count the ConcurrentTasks row gives its
// scheduler, and where the loop must run inside the pool, the benchmark's loop runs in a task.

#define TMC_IMPL
#include <tmc/all_headers.hpp>

#include "Measure.h"
#include "Scaling.h"

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>

namespace
{
// An ex_cpu of `threads` threads, started.
struct Pool
{
    explicit Pool(int threads)
    {
        executor.set_thread_count(static_cast<std::size_t>(threads)).init();
    }
    tmc::ex_cpu executor;
};

// ---------------------------------------------------------------------------------------------
// BM_BurstSpawn_TMC/N: the benchmark's thread posts one root task onto two threads and waits for
// it; the root starts N empty tasks with spawn_many and awaits them all. An item is one task.
tmc::task<void> EmptyTask()
{
    co_return;
}

tmc::task<void> SpawnBurst(std::int64_t count)
{
    co_await tmc::spawn_many(
        tmc::iter_adapter(std::int64_t{0}, [](std::int64_t) { return EmptyTask(); }),
        static_cast<std::size_t>(count));
}

void BM_BurstSpawn_TMC(benchmark::State& state)
{
    Pool pool(2);
    for (auto _ : state)
        tmc::post_waitable(pool.executor, SpawnBurst(state.range(0))).get();
    TCBench::ReportItems(state, state.range(0));
}
BENCHMARK(BM_BurstSpawn_TMC)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// BM_EventPingPongMulti_TMC: two tasks on one thread alternate through two auto_reset_events; an
// item is one round trip.
struct PingPongEvents
{
    tmc::auto_reset_event ping;
    tmc::auto_reset_event pong;
    int value = 0;     // the request or reply, ordered by the event that carries it
    bool stop = false; // read after the ping that follows its write
};

tmc::task<void> Ponger(PingPongEvents* events)
{
    for (;;)
    {
        co_await events->ping;
        if (events->stop)
            co_return;
        ++events->value;
        events->pong.set();
    }
}

tmc::task<void> Pinger(benchmark::State* state, PingPongEvents* events, bool* ok)
{
    for (auto _ : *state)
    {
        const int before = events->value;
        events->ping.set();
        co_await events->pong;
        *ok &= events->value == before + 1;
    }
    events->stop = true;
    events->ping.set();
}

// Client on `clientPool`, server on `serverPool`; both futures waited for.
void RunEventPingPong(benchmark::State& state, tmc::ex_cpu& clientPool, tmc::ex_cpu& serverPool)
{
    PingPongEvents events;
    bool ok = true;
    auto server = tmc::post_waitable(serverPool, Ponger(&events));
    tmc::post_waitable(clientPool, Pinger(&state, &events, &ok)).get();
    server.get();
    if (TCBench::Expect(state, ok, "a reply was lost"))
        TCBench::ReportItems(state, 1);
}

void BM_EventPingPongMulti_TMC(benchmark::State& state)
{
    Pool pool(1);
    RunEventPingPong(state, pool.executor, pool.executor);
}
BENCHMARK(BM_EventPingPongMulti_TMC)->UseRealTime();

// BM_PingPongCrossThread_TMC: the same with client and server on two one-thread pools, so every
// set() resumes a task that belongs to the other thread.
void BM_PingPongCrossThread_TMC(benchmark::State& state)
{
    Pool clientPool(1);
    Pool serverPool(1);
    RunEventPingPong(state, clientPool.executor, serverPool.executor);
}
BENCHMARK(BM_PingPongCrossThread_TMC)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SkynetNatural_TMC/N: the skynet tree over N leaves on two threads, every node spawning its
// ten children with spawn_many and awaiting them. An item is one task (all but the root). The
// same coroutine tree is ConcurrentTasks' Task<T> row's peer, so it is registered under both.
tmc::task<std::int64_t> Skynet(std::int64_t num, std::int64_t size)
{
    if (size == 1)
        co_return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results = co_await tmc::spawn_many<10>(
        tmc::iter_adapter(std::int64_t{0}, [num, childSize](std::int64_t i)
                          { return Skynet(num + i * childSize, childSize); }));
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    co_return sum;
}

void BM_SkynetNatural_TMC(benchmark::State& state)
{
    const std::int64_t leaves = state.range(0);
    Pool pool(2);
    bool ok = true;
    std::int64_t tasks = 0;
    for (std::int64_t level = leaves; level >= 1; level /= 10)
        tasks += level;
    for (auto _ : state)
        ok &=
            tmc::post_waitable(pool.executor, Skynet(0, leaves)).get() == leaves * (leaves - 1) / 2;
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, tasks - 1);
}
BENCHMARK(BM_SkynetNatural_TMC)->Arg(100'000)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SkynetNaturalCoroutine_TMC(benchmark::State& state)
{
    BM_SkynetNatural_TMC(state);
}
BENCHMARK(BM_SkynetNaturalCoroutine_TMC)
    ->Arg(100'000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// BM_ScalingSkynet_TMC: the million-leaf tree on a pool of range(0) threads (the Scaling rows,
// Scaling.h); its peers are BM_ScalingSkynet_TC and _TBB.
void BM_ScalingSkynet_TMC(benchmark::State& state)
{
    constexpr std::int64_t kLeaves = 1'000'000;
    Pool pool(static_cast<int>(state.range(0)));
    bool ok = true;
    for (auto _ : state)
        ok &= tmc::post_waitable(pool.executor, Skynet(0, kLeaves)).get() ==
              kLeaves * (kLeaves - 1) / 2;
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, 1'111'110); // every node but the root
}
BENCHMARK(BM_ScalingSkynet_TMC)
    ->Apply(TCBench::WorkerCounts)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// BM_CoroutineSpawnJoin_TMC/N: one task awaits N child tasks one after another, on a one-thread
// pool, the benchmark's loop inside it; an item is one child.
tmc::task<int> Child(int value)
{
    co_return value + 1;
}

tmc::task<void> SpawnAndJoin(benchmark::State* state, int children, std::int64_t* sum)
{
    for (auto _ : *state)
        for (int i = 0; i < children; ++i)
            *sum += co_await Child(i);
}

void BM_CoroutineSpawnJoin_TMC(benchmark::State& state)
{
    Pool pool(1);
    std::int64_t sum = 0;
    const auto children = static_cast<int>(state.range(0));
    tmc::post_waitable(pool.executor, SpawnAndJoin(&state, children, &sum)).get();
    benchmark::DoNotOptimize(sum);
    TCBench::ReportItems(state, children);
}
BENCHMARK(BM_CoroutineSpawnJoin_TMC)->Arg(1000)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_MutexContended_TMC: 4 tasks on two threads, each locking one tmc::mutex 10 000 times; an
// item is one lock and unlock.
constexpr int kMutexTasks = 4;
constexpr int kMutexOps = 10000;

tmc::task<void> LockMany(tmc::mutex* mutex, std::int64_t* counter)
{
    for (int i = 0; i < kMutexOps; ++i)
    {
        co_await *mutex;
        ++*counter;
        mutex->unlock();
    }
}

tmc::task<void> Contend(tmc::mutex* mutex, std::int64_t* counter)
{
    co_await tmc::spawn_many(
        tmc::iter_adapter(0, [mutex, counter](int) { return LockMany(mutex, counter); }),
        kMutexTasks);
}

void BM_MutexContended_TMC(benchmark::State& state)
{
    Pool pool(2);
    tmc::mutex mutex;
    std::int64_t counter = 0;
    for (auto _ : state)
        tmc::post_waitable(pool.executor, Contend(&mutex, &counter)).get();
    if (TCBench::Expect(state, counter == state.iterations() * kMutexTasks * kMutexOps,
                        "lost updates"))
        TCBench::ReportItems(state, kMutexTasks * kMutexOps);
}
BENCHMARK(BM_MutexContended_TMC)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_ChannelThroughput_TMC/0: the benchmark's thread posts 100 000 values into a tmc::channel (an
// unbounded one: it pairs with ConcurrentTasks' unbounded Channel row), a task on a one-thread
// pool pulls them; an item is one value through the channel.
constexpr int kChannelItems = 100000;

tmc::task<void> Drain(tmc::chan_tok<std::int64_t> channel, std::int64_t* sum)
{
    std::int64_t local = 0;
    for (int i = 0; i < kChannelItems; ++i)
        local += *co_await channel.pull();
    *sum = local;
}

void BM_ChannelThroughput_TMC(benchmark::State& state)
{
    Pool pool(1);
    bool ok = true;
    for (auto _ : state)
    {
        auto channel = tmc::make_channel<std::int64_t>();
        std::int64_t sum = 0;
        auto consumer = tmc::post_waitable(pool.executor, Drain(channel, &sum));
        for (int i = 0; i < kChannelItems; ++i)
            channel.post(i);
        consumer.get();
        ok &= sum == std::int64_t{kChannelItems} * (kChannelItems - 1) / 2;
    }
    if (TCBench::Expect(state, ok, "values lost"))
        TCBench::ReportItems(state, kChannelItems);
}
BENCHMARK(BM_ChannelThroughput_TMC)->Arg(0)->UseRealTime();
} // namespace
