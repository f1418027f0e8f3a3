// The machine's own floors, measured in the same run as the rows they bound: what one
// uncontended locked read-modify-write costs, and what moving one cache line from one core to the
// other costs. No library code runs here. guides/performance.md ("The cost model: floors") turns
// them into the least any implementation of a workload can take on the machine, e.g. the guide's
// Mailbox round trip is ten locked read-modify-writes whoever runs it.

#include "peers/Measure.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace
{
// BM_HardwareLockedExchange: an item is one `exchange` on a line this thread alone writes, back
// to back with the next, so nothing overlaps it (an x86-64 `xchg`, an AArch64 `swpal` or LL/SC
// loop): the price every claim, publish and hand-off of the sync layer pays at least once.
void BM_HardwareLockedExchange(benchmark::State& state)
{
    alignas(64) std::atomic<std::uint64_t> word{0};
    std::uint64_t value = 0;
    for (auto _ : state)
    {
        value = word.exchange(value + 1, std::memory_order_acq_rel);
        benchmark::DoNotOptimize(value);
    }
    TCBench::ReportItems(state, 1);
}
BENCHMARK(BM_HardwareLockedExchange)->UseRealTime();

// BM_HardwareLineTransfer: this thread and a partner take turns writing one word, each spinning
// until the other's write arrives, so the line crosses between their cores twice per iteration;
// an item is one crossing. Whatever one core writes and another then reads or writes pays it --
// a waiter's published handle, a queue's slot, a strand's "idle" -- unless something else hides
// it. Needs two cores: with one, each turn waits for the scheduler's time slice.
void BM_HardwareLineTransfer(benchmark::State& state)
{
    if (std::thread::hardware_concurrency() < 2)
    {
        state.SkipWithError("needs two cores");
        return;
    }
    constexpr std::uint64_t kStop = ~std::uint64_t{0};
    // Odd values are the partner's turn, even ones ours; kStop ends the partner.
    alignas(64) std::atomic<std::uint64_t> turn{0};
    std::thread partner(
        [&turn]
        {
            for (std::uint64_t mine = 1;; mine += 2)
            {
                std::uint64_t seen;
                while ((seen = turn.load(std::memory_order_acquire)) != mine)
                    if (seen == kStop)
                        return;
                turn.store(mine + 1, std::memory_order_release);
            }
        });
    std::uint64_t ours = 0;
    for (auto _ : state)
    {
        turn.store(ours + 1, std::memory_order_release);
        ours += 2;
        while (turn.load(std::memory_order_acquire) != ours)
        {
        }
    }
    turn.store(kStop, std::memory_order_release);
    partner.join();
    TCBench::ReportItems(state, 2);
}
BENCHMARK(BM_HardwareLineTransfer)->UseRealTime();
} // namespace
