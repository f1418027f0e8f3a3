#pragma once
// Measure: what the memory benchmarks read (resident set size, bytes held by malloc) and the
// counters every tc_bench row reports, shared by KernelBench.cpp and the peer workloads.

#include <benchmark/benchmark.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace TCBench
{
// Resident set size of this process in bytes, from /proc/self/statm (0 where unavailable).
inline std::int64_t ResidentBytes() noexcept
{
    std::FILE* file = std::fopen("/proc/self/statm", "r");
    if (!file)
        return 0;
    long long size = 0;
    long long resident = 0;
    const int read = std::fscanf(file, "%lld %lld", &size, &resident);
    std::fclose(file);
    if (read != 2)
        return 0;
    return static_cast<std::int64_t>(resident) * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

// ResidentBytes after giving malloc's free pages back to the system: a baseline taken this way
// does not hide, in heap pages an earlier benchmark freed, the memory a measurement allocates.
inline std::int64_t ResidentBytesAfterTrim() noexcept
{
    malloc_trim(0);
    return ResidentBytes();
}

// Bytes malloc has handed out and not taken back, over every arena, chunk headers included.
inline std::int64_t MallocBytesInUse() noexcept
{
    const struct mallinfo2 info = mallinfo2();
    return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

// Per-item rate: tools/perf-report reads items_per_second as the row's time per item, so every
// row of a workload (ours and each peer's) states what one item is, whatever its batch size.
inline void ReportItems(benchmark::State& state, std::int64_t itemsPerIteration)
{
    state.SetItemsProcessed(state.iterations() * itemsPerIteration);
}

// Memory rows: tools/perf-report reads the `bytes_per_item` counter (lower is better). Pass the
// sum over all iterations of each iteration's bytes per item; the counter averages it.
inline void ReportBytesPerItem(benchmark::State& state, double summedOverIterations)
{
    state.counters["bytes_per_item"] =
        benchmark::Counter(summedOverIterations, benchmark::Counter::kAvgIterations);
}

// Checks a benchmark's own result; a wrong one fails the row instead of reporting a figure.
inline bool Expect(benchmark::State& state, bool condition, const char* what)
{
    if (!condition)
        state.SkipWithError(what);
    return condition;
}
} // namespace TCBench
