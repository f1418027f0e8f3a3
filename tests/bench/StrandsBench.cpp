// TC::strands benchmarks: posting callables to strands on a two-worker Scheduler (with asio's
// strand over asio::thread_pool in the same run, where asio is installed), and coroutine
// spawn-and-join.

#include "Scaling.h"

#include <TC/Core.h>
#include <TC/Strands.h>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#if __has_include(<asio.hpp>)
#include <asio.hpp>
#define TC_STRANDS_BENCH_ASIO 1
#endif

namespace
{
// The tasks' counter, on a cache line of its own: next to the poster's locals (the callable it
// builds on its stack for every post) each task's increment took that line from the poster.
struct alignas(64) RanCounter
{
    std::atomic<std::int64_t> value{0};
};

// Posts state.iterations() callables round-robin over `targets` destinations, through
// post(index, callable), then waits until all have run: time per callable, posting and running.
// Each callable counts itself on a line of its own (RanCounter).
template <class Post>
void PostRoundRobin(benchmark::State& state, std::size_t targets, Post&& post)
{
    RanCounter counter;
    std::atomic<std::int64_t>& ran = counter.value;
    std::int64_t posted = 0;
    std::size_t next = 0;
    for (auto _ : state)
    {
        post(next, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        if (++next == targets)
            next = 0;
        ++posted;
    }
    while (ran.load(std::memory_order_relaxed) != posted)
        std::this_thread::yield();
    state.SetItemsProcessed(posted);
}

// Round-robin over range(0) strands on two workers, serialised per strand.
void BM_StrandPost(benchmark::State& state)
{
    const auto strandCount = static_cast<std::size_t>(state.range(0));
    TC::Scheduler scheduler(2u);
    std::vector<std::unique_ptr<TC::Strands::Strand>> strands;
    for (std::size_t i = 0; i < strandCount; ++i)
        strands.push_back(std::make_unique<TC::Strands::Strand>(scheduler));
    PostRoundRobin(state, strandCount,
                   [&](std::size_t i, auto&& call)
                   { strands[i]->Post(std::forward<decltype(call)>(call)); });
    for (auto& strand : strands)
        strand->WaitIdle();
}
BENCHMARK(BM_StrandPost)->Arg(1)->Arg(64)->UseRealTime();

// The same through KeyedStrands, round-robin over range(0) keys: each post also finds its key's
// strand under the registry's lock, and a key whose queue runs dry retires its strand (kept for
// reuse) until its next post.
void BM_KeyedStrandPost(benchmark::State& state)
{
    TC::Scheduler scheduler(2u);
    TC::Strands::KeyedStrands<int> strands(scheduler);
    PostRoundRobin(state, static_cast<std::size_t>(state.range(0)),
                   [&](std::size_t key, auto&& call)
                   { strands.Post(static_cast<int>(key), std::forward<decltype(call)>(call)); });
    strands.WaitIdle();
}
BENCHMARK(BM_KeyedStrandPost)->Arg(1)->Arg(64)->UseRealTime();

#if TC_STRANDS_BENCH_ASIO
void BM_AsioStrandPost(benchmark::State& state)
{
    const auto strandCount = static_cast<std::size_t>(state.range(0));
    asio::thread_pool pool(2);
    using Strand = asio::strand<asio::thread_pool::executor_type>;
    std::vector<Strand> strands;
    for (std::size_t i = 0; i < strandCount; ++i)
        strands.push_back(asio::make_strand(pool.get_executor()));
    PostRoundRobin(state, strandCount,
                   [&](std::size_t i, auto&& call)
                   { asio::post(strands[i], std::forward<decltype(call)>(call)); });
    pool.join();
}
BENCHMARK(BM_AsioStrandPost)->Arg(1)->Arg(64)->UseRealTime();
#endif

// ---------------------------------------------------------------------------------------------
// BM_ScalingStrandRing_*: kRingStrands strands on range(0) workers (asio: a thread_pool of
// range(0) threads) pass kRingMessages messages around; each message, run on its strand, posts
// itself to the next strand until it has made kRingHops hops. No thread outside the pool posts
// after the start, so the figure (time per hop) is the strands' and the pool's own throughput,
// free to grow with the cores.
constexpr std::size_t kRingStrands = 256;
constexpr std::int64_t kRingMessages = 1024;
constexpr std::int64_t kRingHops = 100;

// Counts finished messages; the last one wakes the benchmark's thread.
class RingFinish
{
public:
    void Reset() noexcept { left_.store(kRingMessages, std::memory_order_relaxed); }
    void MessageDone() noexcept
    {
        if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            left_.notify_one();
    }
    void Wait() const noexcept
    {
        for (std::int64_t left; (left = left_.load(std::memory_order_acquire)) != 0;)
            left_.wait(left, std::memory_order_acquire);
    }

private:
    std::atomic<std::int64_t> left_{0};
};

template <class PostTo>
struct RingMessage
{
    PostTo* postTo;
    RingFinish* finish;
    std::size_t strand;
    std::int64_t hopsLeft;

    void operator()() const
    {
        if (hopsLeft == 0)
            return finish->MessageDone();
        const std::size_t next = strand + 1 == kRingStrands ? 0 : strand + 1;
        (*postTo)(next, RingMessage{postTo, finish, next, hopsLeft - 1});
    }
};

template <class PostTo>
void RunRing(benchmark::State& state, PostTo& postTo)
{
    RingFinish finish;
    for (auto _ : state)
    {
        finish.Reset();
        for (std::int64_t message = 0; message < kRingMessages; ++message)
        {
            const auto strand = static_cast<std::size_t>(message) % kRingStrands;
            postTo(strand, RingMessage<PostTo>{&postTo, &finish, strand, kRingHops});
        }
        finish.Wait();
    }
    state.SetItemsProcessed(state.iterations() * kRingMessages * kRingHops);
}

void BM_ScalingStrandRing_TC(benchmark::State& state)
{
    TC::Scheduler scheduler(static_cast<unsigned>(state.range(0)));
    std::vector<std::unique_ptr<TC::Strands::Strand>> strands;
    for (std::size_t i = 0; i < kRingStrands; ++i)
        strands.push_back(std::make_unique<TC::Strands::Strand>(scheduler));
    auto postTo = [&strands](std::size_t strand, auto message)
    { strands[strand]->Post(std::move(message)); };
    RunRing(state, postTo);
    for (auto& strand : strands)
        strand->WaitIdle();
}
BENCHMARK(BM_ScalingStrandRing_TC)->Apply(TCBench::WorkerCounts)->UseRealTime();

#if TC_STRANDS_BENCH_ASIO
void BM_ScalingStrandRing_Asio(benchmark::State& state)
{
    asio::thread_pool pool(static_cast<std::size_t>(state.range(0)));
    using Strand = asio::strand<asio::thread_pool::executor_type>;
    std::vector<Strand> strands;
    for (std::size_t i = 0; i < kRingStrands; ++i)
        strands.push_back(asio::make_strand(pool.get_executor()));
    auto postTo = [&strands](std::size_t strand, auto message)
    { asio::post(strands[strand], std::move(message)); };
    RunRing(state, postTo);
    pool.join();
}
BENCHMARK(BM_ScalingStrandRing_Asio)->Apply(TCBench::WorkerCounts)->UseRealTime();
#endif

TC::Strands::Task<int> Child(int value)
{
    co_return value + 1;
}

TC::Strands::Task<void> SpawnAndJoin(int children, std::int64_t* sum)
{
    for (int i = 0; i < children; ++i)
        *sum += co_await Child(i);
}

// One coroutine spawns range(0) child tasks one after another and joins each (co_await): time
// per child -- frame allocation, start, symmetric transfer back, result, free.
void BM_CoroutineSpawnJoin(benchmark::State& state)
{
    const auto children = static_cast<int>(state.range(0));
    std::int64_t sum = 0;
    for (auto _ : state)
        TC::Strands::SyncRun(SpawnAndJoin(children, &sum));
    benchmark::DoNotOptimize(sum);
    state.SetItemsProcessed(state.iterations() * children);
}
BENCHMARK(BM_CoroutineSpawnJoin)->Arg(1000);
} // namespace
