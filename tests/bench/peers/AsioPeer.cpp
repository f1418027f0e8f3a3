// asio peer: coroutine spawn-and-join and the memory of a suspended coroutine, written the way an
// asio user writes them (asio::awaitable on an io_context run by one thread). Strand posts over
// asio::thread_pool are StrandsBench.cpp's BM_AsioStrandPost.

#include "Measure.h"

// asio 1.22 recognises C++20 coroutines under Clang only through the pre-standard
// __cpp_coroutines macro, which Clang 14 no longer defines in C++20 mode.
#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(ASIO_HAS_CO_AWAIT)
#define ASIO_HAS_CO_AWAIT 1
#endif

#include <asio.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

namespace
{
asio::awaitable<int> Child(int value)
{
    co_return value + 1;
}

asio::awaitable<void> SpawnAndJoin(int children, std::int64_t* sum)
{
    for (int i = 0; i < children; ++i)
        *sum += co_await Child(i);
}

// BM_CoroutineSpawnJoin_Asio: as StrandsBench.cpp's BM_CoroutineSpawnJoin -- one coroutine
// awaits range(0) child coroutines one after another -- co_spawn'ed on an io_context that the
// benchmark's thread runs; an item is one child.
void BM_CoroutineSpawnJoin_Asio(benchmark::State& state)
{
    const auto children = static_cast<int>(state.range(0));
    asio::io_context context(1);
    std::int64_t sum = 0;
    bool failed = false;
    for (auto _ : state)
    {
        asio::co_spawn(context, SpawnAndJoin(children, &sum),
                       [&failed](std::exception_ptr error) { failed |= error != nullptr; });
        context.run();
        context.restart();
    }
    benchmark::DoNotOptimize(sum);
    if (TCBench::Expect(state, !failed, "a coroutine failed"))
        TCBench::ReportItems(state, children);
}
BENCHMARK(BM_CoroutineSpawnJoin_Asio)->Arg(1000)->UseRealTime();

// BM_CoroutineMemory_Asio: heap bytes per co_spawn'ed coroutine suspended in a steady_timer wait
// (the asio way to park a coroutine until someone else acts): its frames and the wait operation.
// The timers themselves are allocated before the count starts, as ConcurrentTasks' row counts
// nothing of the object it waits on.
constexpr std::size_t kParkedCount = 100'000;

asio::awaitable<void> Park(asio::steady_timer& timer, std::size_t* finished)
{
    asio::error_code error; // operation_aborted: cancelled, which is how the benchmark releases it
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
    ++*finished;
}

void BM_CoroutineMemory_Asio(benchmark::State& state)
{
    double bytesPerCoroutine = 0;
    bool allFinished = true;
    for (auto _ : state)
    {
        asio::io_context context(1);
        std::vector<std::unique_ptr<asio::steady_timer>> timers;
        timers.reserve(kParkedCount);
        for (std::size_t i = 0; i < kParkedCount; ++i)
            timers.push_back(std::make_unique<asio::steady_timer>(
                context, asio::steady_timer::time_point::max()));
        std::size_t finished = 0;
        const std::int64_t before = TCBench::MallocBytesInUse();
        for (auto& timer : timers)
            asio::co_spawn(context, Park(*timer, &finished), asio::detached);
        context.poll(); // every coroutine runs to its wait and suspends there
        const std::int64_t after = TCBench::MallocBytesInUse();
        bytesPerCoroutine += static_cast<double>(after - before) / kParkedCount;
        for (auto& timer : timers)
            timer->cancel();
        context.run();
        allFinished &= finished == kParkedCount;
    }
    if (TCBench::Expect(state, allFinished, "coroutines lost"))
        TCBench::ReportBytesPerItem(state, bytesPerCoroutine);
}
BENCHMARK(BM_CoroutineMemory_Asio)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
} // namespace
