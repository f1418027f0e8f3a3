// BM_ContextSwitch: the kernel's own register-saving switch (kernel/src/context), between the
// benchmark's thread and one fiber, measured the way BM_BoostContextSwitch measures
// boost::context::fiber: an item is one switch, two per iteration. The full path a task takes
// through the suspend protocol and the scheduler is BM_TaskSwitch (KernelBench.cpp).

#include "peers/Measure.h"

#include "context/Context.h"

#include <TC/StackAllocator.h>

#include <benchmark/benchmark.h>

namespace
{
struct RawPair
{
    TC::detail::ExecutionContext thread;
    TC::detail::ExecutionContext fiber;
    bool stop = false;
};

[[noreturn]] void FiberLoop(void* argument, void*)
{
    TC::detail::OnContextStarted();
    auto* pair = static_cast<RawPair*>(argument);
    for (;;)
        TC::detail::SwitchContext(pair->fiber, pair->thread);
}

void BM_ContextSwitch(benchmark::State& state)
{
    constexpr std::size_t size = TC::StackSize::Medium;
    void* stack = TC::DefaultStackAllocator().Allocate(size, TC::StackGuard::Page);
    RawPair pair;
    TC::detail::InitThreadContext(pair.thread);
    TC::detail::MakeContext(pair.fiber, stack, size, static_cast<char*>(stack) + size, &FiberLoop,
                            &pair);
    for (auto _ : state)
        TC::detail::SwitchContext(pair.thread, pair.fiber);
    TC::detail::DestroyContext(pair.fiber);
    TC::DefaultStackAllocator().Deallocate(stack, size, TC::StackGuard::Page);
    TCBench::ReportItems(state, 2);
}
BENCHMARK(BM_ContextSwitch)->UseRealTime();
} // namespace
