// WaitQueueFormsBench: the library's Semaphore and ConditionVariable beside the same primitives
// written on WaitQueue (WaitQueueForms.h), in one run; BM_MutexContendedOnWaitQueue in
// SyncBench.cpp does the same for Mutex.
// - SemaphorePingPong: two tasks, a semaphore each way; an item is one round trip.
// - ConditionVariablePingPong: two tasks take turns on a flag guarded by a Mutex, waking each
//   other through one condition variable; an item is one round trip.
// range(0): the scheduler's workers (1: the two tasks share a thread; 2: they cross threads).
// No main: tc_bench links every tests/bench/*Bench.cpp with benchmark_main.

#include "WaitQueueForms.h"
#include "peers/Measure.h"

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace
{
namespace Sync = TC::Synchronization;

template <class Sem>
void SemaphorePingPong(benchmark::State& state)
{
    TC::Scheduler scheduler(static_cast<unsigned>(state.range(0)));
    Sem ping;
    Sem pong;
    std::atomic<bool> stop{false};
    std::int64_t served = 0;
    TC::JoinHandle server = scheduler.Start(
        [&]
        {
            for (;;)
            {
                ping.Acquire();
                if (stop.load(std::memory_order_relaxed))
                    return;
                ++served;
                pong.Release();
            }
        });
    std::int64_t asked = 0;
    scheduler
        .Start(
            [&]
            {
                for (auto _ : state)
                {
                    ++asked;
                    ping.Release();
                    pong.Acquire();
                }
                stop = true;
                ping.Release();
            })
        .Join();
    server.Join();
    if (TCBench::Expect(state, served == asked, "a round trip was lost"))
        TCBench::ReportItems(state, 1);
}

void BM_SemaphorePingPong(benchmark::State& state)
{
    SemaphorePingPong<Sync::Semaphore>(state);
}
BENCHMARK(BM_SemaphorePingPong)->Arg(1)->Arg(2)->UseRealTime();

void BM_SemaphorePingPongOnWaitQueue(benchmark::State& state)
{
    SemaphorePingPong<TCBench::WaitQueueSemaphore>(state);
}
BENCHMARK(BM_SemaphorePingPongOnWaitQueue)->Arg(1)->Arg(2)->UseRealTime();

template <class CV>
void ConditionVariablePingPong(benchmark::State& state)
{
    TC::Scheduler scheduler(static_cast<unsigned>(state.range(0)));
    Sync::Mutex mutex;
    CV turns;
    int turn = 0; // 0: the client's, 1: the server's, 2: the server is to stop (under mutex)
    std::int64_t served = 0;
    TC::JoinHandle server = scheduler.Start(
        [&]
        {
            std::unique_lock lock(mutex);
            for (;;)
            {
                turns.Wait(lock, [&] { return turn != 0; });
                if (turn == 2)
                    return;
                ++served;
                turn = 0;
                turns.NotifyOne();
            }
        });
    std::int64_t asked = 0;
    scheduler
        .Start(
            [&]
            {
                std::unique_lock lock(mutex);
                for (auto _ : state)
                {
                    ++asked;
                    turn = 1;
                    turns.NotifyOne();
                    turns.Wait(lock, [&] { return turn == 0; });
                }
                turn = 2;
                turns.NotifyOne();
            })
        .Join();
    server.Join();
    if (TCBench::Expect(state, served == asked, "a round trip was lost"))
        TCBench::ReportItems(state, 1);
}

void BM_ConditionVariablePingPong(benchmark::State& state)
{
    ConditionVariablePingPong<Sync::ConditionVariable>(state);
}
BENCHMARK(BM_ConditionVariablePingPong)->Arg(1)->Arg(2)->UseRealTime();

void BM_ConditionVariablePingPongOnWaitQueue(benchmark::State& state)
{
    ConditionVariablePingPong<TCBench::WaitQueueConditionVariable>(state);
}
BENCHMARK(BM_ConditionVariablePingPongOnWaitQueue)->Arg(1)->Arg(2)->UseRealTime();
} // namespace
