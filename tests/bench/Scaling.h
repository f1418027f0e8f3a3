#pragma once
// Scaling rows: every BM_Scaling<Workload>_<Impl> runs its workload on 1, 2, 4, ... workers (or
// threads, for a peer), up to the machine's hardware threads, so one run on a wide machine shows
// how each scheduler's throughput grows with cores. tools/perf-report leaves them out by default
// (two cores say nothing about scaling); `tools/perf-report --filter Scaling` runs only them.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <thread>

namespace TCBench
{
// Registers range(0) = 1, 2, 4, ... up to the hardware threads (at least 1 and 2), named
// "workers" so the rows of every implementation pair by it.
inline void WorkerCounts(benchmark::internal::Benchmark* benchmark)
{
    const std::int64_t hardware = std::max<std::int64_t>(2, std::thread::hardware_concurrency());
    benchmark->ArgName("workers");
    for (std::int64_t workers = 1; workers <= hardware; workers *= 2)
        benchmark->Arg(workers);
    // A machine whose thread count is not a power of two is measured at its full width as well.
    if ((hardware & (hardware - 1)) != 0)
        benchmark->Arg(hardware);
}
} // namespace TCBench
