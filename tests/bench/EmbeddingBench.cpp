// Embedding benchmarks: what a Future resolve+wait costs (same thread, same worker, cross
// thread) and what one host pump turn costs (empty, and with 1 000 tiny tasks).
// Targets of the embedding layer: same-thread resolve+wait under 30 ns; an empty pump turn under 50 ns.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace
{
using TC::Synchronization::Future;
using TC::Synchronization::Promise;

enum class Where
{
    SameThread,  // resolve, then wait: the wait finds the value (the whole pair's life included)
    SameWorker,  // a task waits, another task on the same worker resolves it (local queue)
    CrossThread, // a converted thread waits, another thread resolves
};

void BM_FutureResolveWait(benchmark::State& state, Where where)
{
    switch (where)
    {
    case Where::SameThread:
        for (auto _ : state)
        {
            Promise<int> promise;
            Future<int> future = promise.GetFuture();
            promise.SetValue(1);
            benchmark::DoNotOptimize(future.Wait());
        }
        break;
    case Where::SameWorker:
    {
        // Two tasks on one worker play ping-pong: each resolve finds the other task suspended and
        // queues it on the worker's own queue; each wait suspends and switches straight to it.
        // One iteration is one round trip: two resolves and two suspending waits.
        constexpr int kBatch = 256;
        struct Batch
        {
            std::vector<Promise<int>> ping = std::vector<Promise<int>>(kBatch);
            std::vector<Promise<int>> pong = std::vector<Promise<int>>(kBatch);
            std::vector<Future<int>> pingF, pongF;
            Future<Batch*> nextBell; // where the next batch (or nullptr: stop) arrives
            Batch()
            {
                for (int i = 0; i < kBatch; ++i)
                {
                    pingF.push_back(ping[i].GetFuture());
                    pongF.push_back(pong[i].GetFuture());
                }
            }
        };
        TC::Scheduler scheduler(1);
        Promise<Batch*> firstBell;
        Future<Batch*> bell = firstBell.GetFuture();
        auto echo = scheduler.Start(
            [bell = std::move(bell)]() mutable
            {
                while (Batch* batch = bell.Wait())
                {
                    bell = std::move(batch->nextBell);
                    for (int i = 0; i < kBatch; ++i)
                        batch->pong[i].SetValue(batch->pingF[i].Wait());
                }
            });
        auto driver = scheduler.Start(
            [&state, firstBell = std::move(firstBell)]() mutable
            {
                Promise<Batch*> ring = std::move(firstBell);
                while (state.KeepRunningBatch(kBatch))
                {
                    Batch batch;
                    Promise<Batch*> next;
                    batch.nextBell = next.GetFuture();
                    ring.SetValue(&batch);
                    ring = std::move(next);
                    for (int i = 0; i < kBatch; ++i)
                    {
                        batch.ping[i].SetValue(i);
                        benchmark::DoNotOptimize(batch.pongF[i].Wait());
                    }
                }
                ring.SetValue(nullptr);
            });
        driver.Join();
        echo.Join();
        break;
    }
    case Where::CrossThread:
    {
        std::atomic<Promise<int>*> slot{nullptr};
        std::atomic<bool> stop{false};
        std::thread resolver(
            [&]
            {
                while (!stop.load(std::memory_order_relaxed))
                {
                    if (Promise<int>* p = slot.exchange(nullptr, std::memory_order_acquire))
                        p->SetValue(1);
                }
            });
        for (auto _ : state)
        {
            Promise<int> promise;
            Future<int> future = promise.GetFuture();
            slot.store(&promise, std::memory_order_release);
            benchmark::DoNotOptimize(future.Wait());
        }
        stop = true;
        resolver.join();
        break;
    }
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_FutureResolveWait, same_thread, Where::SameThread);
BENCHMARK_CAPTURE(BM_FutureResolveWait, same_worker, Where::SameWorker)->UseRealTime();
BENCHMARK_CAPTURE(BM_FutureResolveWait, cross_thread, Where::CrossThread)->UseRealTime();

enum class Pump
{
    RunFor,     // what the target is about: a budgeted turn
    RunPending, // the same turn without a budget (no clock reads), for comparison
};

// One pump turn of a host-pumped scheduler: with nothing queued (what a game pays every frame
// when it has no work), and with `tasks` tiny tasks queued before the turn (started outside the
// timed region; the turn runs them all).
void BM_HostPumpOverhead(benchmark::State& state, int tasks, Pump pump)
{
    TC::Scheduler host;
    host.RunPending();
    long sink = 0;
    for (auto _ : state)
    {
        if (tasks > 0)
        {
            state.PauseTiming();
            for (int i = 0; i < tasks; ++i)
                host.Start([&sink] { ++sink; }).Detach();
            state.ResumeTiming();
        }
        const TC::PumpResult result =
            pump == Pump::RunFor ? host.RunFor(std::chrono::milliseconds(100)) : host.RunPending();
        benchmark::DoNotOptimize(result.ran);
    }
    benchmark::DoNotOptimize(sink);
    if (tasks > 0)
        state.SetItemsProcessed(state.iterations() * tasks);
}
// A frame of a game loop that spawns its jobs: the host thread starts `tasks` tiny detached tasks
// between pumps, then runs them with one RunPending. An item is one task started and run.
void BM_HostStartAndRun(benchmark::State& state, int tasks)
{
    TC::Scheduler host;
    host.RunPending();
    long sink = 0;
    for (auto _ : state)
    {
        for (int i = 0; i < tasks; ++i)
            host.Start([&sink] { ++sink; }).Detach();
        benchmark::DoNotOptimize(host.RunPending().ran);
    }
    benchmark::DoNotOptimize(sink);
    state.SetItemsProcessed(state.iterations() * tasks);
}
BENCHMARK_CAPTURE(BM_HostStartAndRun, tasks_1000, 1000);

BENCHMARK_CAPTURE(BM_HostPumpOverhead, empty, 0, Pump::RunFor);
BENCHMARK_CAPTURE(BM_HostPumpOverhead, tasks_1000, 1000, Pump::RunFor);
BENCHMARK_CAPTURE(BM_HostPumpOverhead, empty_run_pending, 0, Pump::RunPending);
} // namespace
