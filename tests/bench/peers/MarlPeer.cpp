// marl peer: the workloads written the way a marl user writes them -- marl::schedule onto a
// marl::Scheduler with worker threads, marl::WaitGroup to join, marl::Event to hand off. Built
// only where tools/perf-report found the upstream source (tests/bench/CMakeLists.txt,
// TC_PEER_SRC). Names: BM_<Workload>_Marl, pairing with the ConcurrentTasks row of the same
// workload. Fibers keep marl's default stack size; a task gets a fiber when it first blocks.
//
// A row whose tasks are started from inside the pool enqueues its root with Scheduler::enqueue
// from the benchmark's (unbound) thread and waits for it on a WaitGroup, which blocks an unbound
// thread like a condition variable.

#include "Measure.h"

#include <marl/defer.h>
#include <marl/event.h>
#include <marl/scheduler.h>
#include <marl/waitgroup.h>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

namespace
{
// A marl scheduler of `threads` worker threads.
marl::Scheduler::Config Workers(int threads)
{
    marl::Scheduler::Config config;
    config.setWorkerThreadCount(threads);
    return config;
}

// Runs `body` as a task of `scheduler` and waits, on this unbound thread, until it returned.
void RunOn(marl::Scheduler& scheduler, std::function<void()> body)
{
    marl::WaitGroup finished(1);
    scheduler.enqueue(marl::Task(
        [&body, finished]
        {
            body();
            finished.done();
        }));
    finished.wait();
}

// ---------------------------------------------------------------------------------------------
// BM_BurstSpawn_Marl/N: the benchmark's thread, bound to a two-worker scheduler as marl requires
// of a thread that calls marl::schedule, schedules N empty tasks that count a WaitGroup down and
// waits on it; an item is one task.
void BM_BurstSpawn_Marl(benchmark::State& state)
{
    const auto count = static_cast<unsigned>(state.range(0));
    marl::Scheduler scheduler(Workers(2));
    scheduler.bind();
    defer(scheduler.unbind());
    for (auto _ : state)
    {
        marl::WaitGroup done(count);
        for (unsigned i = 0; i < count; ++i)
            marl::schedule([done] { done.done(); });
        done.wait();
    }
    TCBench::ReportItems(state, state.range(0));
}
BENCHMARK(BM_BurstSpawn_Marl)->Arg(200'000)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Ping-pong through two auto-reset marl::Events; an item is one round trip. The server's task is
// enqueued on `serverScheduler`, the client's (the benchmark's loop) on `clientScheduler`.
void RunEventPingPong(benchmark::State& state, marl::Scheduler& clientScheduler,
                      marl::Scheduler& serverScheduler)
{
    marl::Event ping(marl::Event::Mode::Auto);
    marl::Event pong(marl::Event::Mode::Auto);
    int value = 0;     // the request or reply, ordered by the event that carries it
    bool stop = false; // read after the signal that follows its write
    bool ok = true;
    marl::WaitGroup serverDone(1);
    serverScheduler.enqueue(marl::Task(
        [&, serverDone]
        {
            for (;;)
            {
                ping.wait();
                if (stop)
                    break;
                ++value;
                pong.signal();
            }
            serverDone.done();
        }));
    RunOn(clientScheduler,
          [&]
          {
              for (auto _ : state)
              {
                  const int before = value;
                  ping.signal();
                  pong.wait();
                  ok &= value == before + 1;
              }
              stop = true;
              ping.signal();
          });
    serverDone.wait();
    if (TCBench::Expect(state, ok, "a reply was lost"))
        TCBench::ReportItems(state, 1);
}

// BM_EventPingPongMulti_Marl: both tasks on a scheduler of one worker thread.
void BM_EventPingPongMulti_Marl(benchmark::State& state)
{
    marl::Scheduler scheduler(Workers(1));
    RunEventPingPong(state, scheduler, scheduler);
}
BENCHMARK(BM_EventPingPongMulti_Marl)->UseRealTime();

// BM_PingPongCrossThread_Marl: client and server on two schedulers of one worker each, so every
// signal wakes a fiber that lives on the other thread.
void BM_PingPongCrossThread_Marl(benchmark::State& state)
{
    marl::Scheduler clientScheduler(Workers(1));
    marl::Scheduler serverScheduler(Workers(1));
    RunEventPingPong(state, clientScheduler, serverScheduler);
}
BENCHMARK(BM_PingPongCrossThread_Marl)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// BM_SkynetNatural_Marl/N: the skynet tree over N leaves on two workers, every node scheduling
// its ten children and waiting on a WaitGroup; an item is one task (all but the root).
std::int64_t Skynet(std::int64_t num, std::int64_t size)
{
    if (size == 1)
        return num;
    const std::int64_t childSize = size / 10;
    std::array<std::int64_t, 10> results{};
    marl::WaitGroup children(10);
    for (int i = 0; i < 10; ++i)
        marl::schedule(
            [&results, children, num, childSize, i]
            {
                results[static_cast<std::size_t>(i)] = Skynet(num + i * childSize, childSize);
                children.done();
            });
    children.wait();
    std::int64_t sum = 0;
    for (std::int64_t result : results)
        sum += result;
    return sum;
}

void BM_SkynetNatural_Marl(benchmark::State& state)
{
    const std::int64_t leaves = state.range(0);
    marl::Scheduler scheduler(Workers(2));
    bool ok = true;
    std::int64_t tasks = 0;
    for (std::int64_t level = leaves; level >= 1; level /= 10)
        tasks += level;
    for (auto _ : state)
    {
        std::int64_t sum = 0;
        RunOn(scheduler, [&] { sum = Skynet(0, leaves); });
        ok &= sum == leaves * (leaves - 1) / 2;
    }
    if (TCBench::Expect(state, ok, "skynet: wrong sum"))
        TCBench::ReportItems(state, tasks - 1);
}
BENCHMARK(BM_SkynetNatural_Marl)->Arg(100'000)->UseRealTime()->Unit(benchmark::kMillisecond);
} // namespace
