// Boost.Context peer: the raw switch of boost::context::fiber, the floor any stackful kernel's
// switch is judged against (the kernel's target: ours within 1.2x of it).

#include "Measure.h"

#include <boost/context/fiber.hpp>

#include <benchmark/benchmark.h>

#include <utility>

namespace
{
namespace ctx = boost::context;

// BM_BoostContextSwitch (row ContextSwitch, impl BoostContext): the benchmark's thread and one
// fiber resume each other; an item is one switch, two per iteration.
void BM_BoostContextSwitch(benchmark::State& state)
{
    bool stop = false;
    ctx::fiber other{[&stop](ctx::fiber&& caller)
                     {
                         while (!stop)
                             caller = std::move(caller).resume();
                         return std::move(caller);
                     }};
    for (auto _ : state)
        other = std::move(other).resume();
    stop = true;
    other = std::move(other).resume(); // lets the fiber return, so it is destroyed finished
    TCBench::ReportItems(state, 2);
}
BENCHMARK(BM_BoostContextSwitch)->UseRealTime();
} // namespace
