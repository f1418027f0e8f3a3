// game-loop: a fixed-step game loop on the main thread that embeds ConcurrentTasks the way an
// engine does. The main thread pumps its own scheduler (no threads of its own) within a per-frame
// budget; a second scheduler has two workers. Each frame fans the simulation out to the workers,
// waits for it from a task (the main thread never blocks on it), applies the results on the main
// thread, and hands background work (telemetry, streaming, a long job) to lower priority.
// It prints frame-time statistics and checks that every frame's results arrived complete and in
// order; it exits non-zero if anything is off. With --trace FILE it also writes the run's task
// and coroutine zones as a Chrome trace (open it in ui.perfetto.dev).

#include "support/ChromeTrace.h"

#include <TC/Core.h>
#include <TC/Synchronization/AutoResetEvent_s.h>
#include <TC/Synchronization/Future.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

using TC::Synchronization::Future;
using TC::Synchronization::Promise;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace
{
constexpr int kFrames = 300;
constexpr int kEntities = 8192;
constexpr int kChunks = 8;
constexpr int kChunkSize = kEntities / kChunks;
constexpr float kDt = 1.0f / 240.0f;
constexpr auto kTick = 4ms;      // fixed step: one frame every 4 ms
constexpr auto kSlice = 500us;   // how long the host runs work before looking up again
constexpr int kStreamEvery = 30; // a streaming request every 30 frames
constexpr int kExpectedAssets = (kFrames + kStreamEvery - 1) / kStreamEvery;
constexpr int kLongJobUnits = 8; // units of the long job per frame
constexpr std::size_t kParticles = 100'000; // aged by a ParallelFor each frame
constexpr std::size_t kAgents = 64;          // one job each per frame, started as one bulk

int failures = 0;

void Check(bool condition, const char* what)
{
    if (!condition)
    {
        ++failures;
        std::fprintf(stderr, "game-loop: CHECK FAILED: %s\n", what);
    }
}

// The world the main thread owns: only tasks running on the host write it.
struct World
{
    std::vector<float> position = std::vector<float>(kEntities);
    std::vector<float> velocity = std::vector<float>(kEntities);
};

struct ChunkResult
{
    int frame = -1;
    int chunk = -1;
    std::vector<float> position;
    std::vector<float> velocity;
};

// One fixed step of a damped spring per entity: cheap, deterministic, easy to recompute.
void Step(const World& world, int first, int count, float* position, float* velocity)
{
    for (int i = 0; i < count; ++i)
    {
        const float x = world.position[first + i];
        const float v = world.velocity[first + i];
        const float nv = v + kDt * (-40.0f * x - 0.5f * v);
        velocity[i] = nv;
        position[i] = x + kDt * nv;
    }
}

ChunkResult SimulateChunk(const World& world, int frame, int chunk)
{
    ChunkResult result;
    result.frame = frame;
    result.chunk = chunk;
    result.position.resize(kChunkSize);
    result.velocity.resize(kChunkSize);
    Step(world, chunk * kChunkSize, kChunkSize, result.position.data(), result.velocity.data());
    return result;
}

// [guide:allocator]
// Task stacks come from here: a task takes one when it first runs and gives it back when it
// ends. This one keeps the game's memory budget; an engine would carve from its own arena.
// Allocate may be called from any thread of the scheduler; the scheduler pools released stacks,
// so in steady state neither member runs.
class BudgetStackAllocator final : public TC::IStackAllocator
{
public:
    explicit BudgetStackAllocator(std::size_t budget) : budget_(budget) {}

    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        if (used_.fetch_add(size) + size > budget_)
        {
            used_.fetch_sub(size);
            throw std::bad_alloc(); // that task ends unrun and its Join rethrows this
        }
        ++stacks_;
        return TC::DefaultStackAllocator().Allocate(size, guard); // guard page included
    }

    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
        used_.fetch_sub(size);
        --stacks_;
    }

    std::size_t Used() const noexcept { return used_.load(); }
    int Stacks() const noexcept { return stacks_.load(); }

private:
    const std::size_t budget_;
    std::atomic<std::size_t> used_{0};
    std::atomic<int> stacks_{0};
};
// [/guide:allocator]

// [guide:hooks]
// What a profiler's fiber API needs (Tracy: TracyFiberEnter(name) / TracyFiberLeave): each
// task's enter and leave, in pairs, on the thread that runs it, with a stable name. Here we just
// count and check the pairing.
struct Profiler
{
    std::atomic<long> enters{0};
    std::atomic<long> leaves{0};
    std::atomic<int> unpaired{0};
    std::atomic<int> threadsStarted{0};
    std::atomic<int> threadsStopped{0};
};
thread_local const char* currentZone = nullptr;

TC::SchedulerHooks MakeHooks(Profiler& profiler)
{
    TC::SchedulerHooks hooks;
    hooks.threadStart = [&profiler](unsigned workerIndex)
    {
        const std::string name = "sim-worker-" + std::to_string(workerIndex);
        pthread_setname_np(pthread_self(), name.c_str());
#if defined(__SSE__)
        _mm_setcsr(_mm_getcsr() | 0x8040); // flush denormals to zero (FTZ | DAZ)
#endif
        ++profiler.threadsStarted;
    };
    hooks.threadStop = [&profiler](unsigned) { ++profiler.threadsStopped; };
    hooks.taskEnter = [&profiler](TC::TaskHandle, const char* name)
    {
        if (currentZone != nullptr)
            ++profiler.unpaired;
        currentZone = name; // TracyFiberEnter(name)
        ++profiler.enters;
    };
    hooks.taskLeave = [&profiler](TC::TaskHandle, const char* name)
    {
        if (currentZone != name)
            ++profiler.unpaired;
        currentZone = nullptr; // TracyFiberLeave
        ++profiler.leaves;
    };
    return hooks;
}
// [/guide:hooks]

// Counts each resumption of a coroutine whose promise derives from it, and those that found no
// coroutine zone open as their body went on (see ThisThreadId below on thread-locals across a
// suspension: CurrentChain reads afresh).
std::atomic<int> coroutineResumptions{0};
std::atomic<int> resumedOutsideZone{0};
[[gnu::noinline]] std::uint64_t CurrentChain();

struct ZoneCheckedPromise
{
    template <class Awaiter>
    struct Checked
    {
        Awaiter inner;
        bool await_ready() { return inner.await_ready(); }
        template <class Handle>
        decltype(auto) await_suspend(Handle handle) { return inner.await_suspend(handle); }
        void await_resume() // the sample's coroutines await nothing that returns a value
        {
            inner.await_resume(); // the library's awaiter enters the zone here
            ++coroutineResumptions;
            if (CurrentChain() == 0)
                ++resumedOutsideZone;
        }
    };
    template <class Awaiter>
    Checked<Awaiter> await_transform(Awaiter awaiter)
    {
        return {std::move(awaiter)};
    }
};

// [guide:coroutine-hooks]
// The same for coroutines: a scheduler that resumes one calls coroutineEnter/coroutineLeave
// around it on that thread, with its chain's id (unique in the process, like TaskHandle::Id())
// and name (Tracy: TracyFiberEnter(name)).
struct CoroutineZones
{
    std::atomic<long> enters{0};
    std::atomic<long> leaves{0};
    std::atomic<int> unpaired{0};
};
thread_local std::uint64_t currentChain = 0;

void AddCoroutineHooks(TC::SchedulerHooks& hooks, CoroutineZones& zones)
{
    hooks.coroutineEnter = [&zones](std::uint64_t chainId, const char*)
    {
        if (currentChain != 0 || chainId == 0)
            ++zones.unpaired;
        currentChain = chainId;
        ++zones.enters;
    };
    hooks.coroutineLeave = [&zones](std::uint64_t chainId, const char*)
    {
        if (currentChain != chainId)
            ++zones.unpaired;
        currentChain = 0;
        ++zones.leaves;
    };
}

// A coroutine that starts at once and frees itself at the end. Its promise's Identity() names
// its chain to the hooks (without one a resumption is a fresh "coroutine").
struct FireAndForget
{
    struct promise_type : ZoneCheckedPromise // the sample's check that each resumption is in a zone
    {
        FireAndForget get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        TC::CoroutineIdentity& Identity() noexcept { return identity; }
        TC::CoroutineIdentity identity{.id = 0, .name = "stream-asset"};
    };
};
// [/guide:coroutine-hooks]

[[gnu::noinline]] std::uint64_t CurrentChain()
{
    asm volatile("" ::: "memory");
    return currentChain;
}

// [guide:async]
// Runs `work` as a task on `scheduler` and returns a Future of its result. Start only queues the
// task: it never blocks and never runs the work inline, from the host or anywhere else.
template <class F>
auto Async(TC::Scheduler& scheduler, F work, TC::TaskOptions options)
{
    using R = std::invoke_result_t<F&>;
    Promise<R> promise;
    Future<R> future = promise.GetFuture();
    scheduler
        .Start(
            [work = std::move(work), promise = std::move(promise)]() mutable
            {
                try
                {
                    promise.SetValue(work());
                }
                catch (...)
                {
                    promise.SetException(std::current_exception());
                }
            },
            options)
        .Detach();
    return future;
}
// [/guide:async]

// [guide:thread-id]
// The calling thread's id, read afresh. std::this_thread::get_id() is pthread_self(), which glibc
// declares const, so an optimiser may reuse one call's answer after the task moved to another
// thread (the same goes for the address of a thread_local). Across a wait, yield or move, ask
// through a call it cannot see into.
[[gnu::noinline]] std::thread::id ThisThreadId()
{
    asm volatile("" ::: "memory"); // not a const function: it must run each time
    return std::this_thread::get_id();
}
// [/guide:thread-id]

struct Game
{
    Game(TC::Scheduler& hostScheduler, TC::Scheduler& workerScheduler)
        : host(hostScheduler), workers(workerScheduler), mainThread(std::this_thread::get_id())
    {
    }

    TC::Scheduler& host;
    TC::Scheduler& workers;
    std::thread::id mainThread;
    World world;
    // Main-thread-only bookkeeping: written only by tasks and coroutines running on the host.
    std::vector<int> appliedFrames;
    std::vector<int> telemetryFrames;
    std::vector<int> streamedAssets;
    int misplaced = 0;  // host-pinned work seen on another thread
    int outOfOrder = 0; // chunk results for the wrong frame or slot
    // Touched by the workers.
    TC::Synchronization::AutoResetEvent_s frameStarted; // paces the long job
    std::atomic<int> onMainByMistake{0};
    std::atomic<long> longJobUnits{0};
    std::vector<float> particles = std::vector<float>(kParticles, 1.0f); // chunks by ParallelFor
    std::vector<int> decisions = std::vector<int>(kAgents, -1);          // one slot per agent job
    bool OnHost() const { return ThisThreadId() == mainThread; }
};

// [guide:move]
// Background telemetry for one frame: summarised on a worker, recorded on the main thread (its
// log is main-thread-only, so no lock), then back to the workers to finish.
void Telemetry(Game& game, int frame, std::vector<float> velocities)
{
    float energy = 0;
    for (float v : velocities)
        energy += v * v;

    TC::MoveCurrentTaskTo(game.host, TC::Priority::Normal); // the rest runs on the main thread
    game.misplaced += game.OnHost() ? 0 : 1;
    game.telemetryFrames.push_back(frame);

    TC::MoveCurrentTaskTo(game.workers, TC::Priority::Normal); // and back to the workers
    if (game.OnHost() || !(energy >= 0.0f))
        ++game.onMainByMistake;
}

// The coroutine form: co_await a scheduler's Schedule() to continue there.
FireAndForget StreamAsset(Game& game, int id)
{
    co_await game.workers.Schedule(TC::Priority::Normal); // "load" off the main thread
    std::vector<int> bytes(4096, id);
    int checksum = 0;
    for (int b : bytes)
        checksum += b;
    co_await game.host.Schedule(TC::Priority::Normal); // "register" on the main thread
    game.misplaced += game.OnHost() ? 0 : 1;
    game.streamedAssets.push_back(checksum / 4096);
}
// [/guide:move]

// [guide:parallel-for]
// The particles age each frame: a ParallelFor over 100 000 floats on the workers. Called from the
// frame task, it runs chunks on the main thread too, then suspends the frame task (the host goes
// on pumping) until the last chunk ran. Chunks are not tasks: one helper task per worker runs
// them, splitting the range as it goes.
void AgeParticles(Game& game)
{
    TC::ParallelFor(game.workers, {0, game.particles.size()}, 2048,
                    [&particles = game.particles](TC::IndexRange chunk)
                    {
                        for (std::size_t i = chunk.begin; i < chunk.end; ++i)
                            particles[i] = particles[i] * 0.99f + 0.01f;
                    },
                    {.name = "particles", .priority = TC::Priority::High});
}
// [/guide:parallel-for]

int Decide(std::size_t agent, int frame)
{
    return static_cast<int>((agent * 2654435761u + static_cast<std::size_t>(frame)) % 7);
}

// [guide:bulk-start]
// Every agent thinks each frame: one job per agent, started as one bulk start -- their blocks
// taken together, queued with one enqueue and one wake-up -- instead of a Start each. Each job
// is a task as Start makes it (name, priority, hooks, its JoinHandle).
void ThinkAgents(Game& game, int frame)
{
    std::vector<TC::JoinHandle> jobs = game.workers.StartBulk(
        kAgents, [&decisions = game.decisions, frame](std::size_t agent)
        { decisions[agent] = Decide(agent, frame); },
        {.name = "agent", .priority = TC::Priority::High});
    for (TC::JoinHandle& job : jobs)
        job.Join(); // the frame task suspends while the jobs run; the host keeps pumping
}
// [/guide:bulk-start]

// [guide:fan-out]
// One frame, run as a High task on the host: fan the simulation out to the workers, wait for
// it (this task suspends; the host thread goes on pumping), then apply it on the main thread.
void RunFrame(Game& game, int frame)
{
    std::vector<Future<ChunkResult>> parts;
    for (int chunk = 0; chunk < kChunks; ++chunk)
        parts.push_back(Async(game.workers,
                              [&world = game.world, frame, chunk]
                              { return SimulateChunk(world, frame, chunk); },
                              {.name = "simulate", .priority = TC::Priority::High}));

    std::vector<ChunkResult> results;
    for (Future<ChunkResult>& part : parts)
        results.push_back(part.Wait()); // a task waits: no thread blocks

    game.misplaced += game.OnHost() ? 0 : 1;
    for (int chunk = 0; chunk < kChunks; ++chunk)
    {
        const ChunkResult& result = results[chunk];
        if (result.frame != frame || result.chunk != chunk)
            ++game.outOfOrder;
        std::copy(result.position.begin(), result.position.end(),
                  game.world.position.begin() + chunk * kChunkSize);
        std::copy(result.velocity.begin(), result.velocity.end(),
                  game.world.velocity.begin() + chunk * kChunkSize);
    }
    AgeParticles(game);
    ThinkAgents(game, frame);
    game.appliedFrames.push_back(frame);

    game.workers
        .Start([&game, frame, v = std::move(results[0].velocity)]() mutable
               { Telemetry(game, frame, std::move(v)); },
               {.name = "telemetry", .priority = TC::Priority::Normal})
        .Detach();
    if (frame % kStreamEvery == 0)
        StreamAsset(game, frame);
}
// [/guide:fan-out]

// [guide:shutdown]
// A long background job that lives as long as the game: each frame it does a few units of work,
// letting other work through between them, and it polls the shutdown request so the game can
// stop it at any point. Between frames it waits (suspended: no worker is held).
void LongJob(Game& game)
{
    std::vector<float> scratch(1024, 1.0f);
    while (!TC::ShutdownRequested())
    {
        game.frameStarted.Wait();
        for (int unit = 0; unit < kLongJobUnits && !TC::ShutdownRequested(); ++unit)
        {
            for (float& s : scratch)
                s = s * 0.999f + 0.001f;
            ++game.longJobUnits;
            TC::YieldTask(); // queued frame work (High) goes first on this worker
        }
    }
}
// [/guide:shutdown]

double Percentile(std::vector<double> sorted, double p)
{
    const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(index, sorted.size() - 1)];
}
} // namespace

int main(int argc, char** argv)
{
    const char* tracePath = nullptr; // --trace FILE
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
            tracePath = argv[++i];
        else
        {
            std::fprintf(stderr, "usage: %s [--trace FILE]\n", argv[0]);
            return EXIT_FAILURE;
        }
    }
    const auto programStart = Clock::now();
    Profiler profiler;
    CoroutineZones zones;
    ChromeTrace trace; // outlives both schedulers
    // [guide:setup]
    BudgetStackAllocator stacks(64 * 1024 * 1024); // outlives both schedulers

    // The main thread's scheduler: no workers, so no threads; the main thread pumps it.
    TC::SchedulerOptions hostOptions;
    hostOptions.name = "main";
    hostOptions.workerCount = 0;
    hostOptions.stackAllocator = &stacks;
    hostOptions.stackSize = TC::StackSize::Medium;
    hostOptions.hooks = MakeHooks(profiler);

    // The simulation's scheduler: two workers, small stacks (the jobs are shallow), and workers
    // that spin briefly and then sleep when there is nothing to do.
    TC::SchedulerOptions workerOptions;
    workerOptions.name = "sim";
    workerOptions.workerCount = 2;
    workerOptions.stackAllocator = &stacks;
    workerOptions.stackSize = TC::StackSize::Small;
    workerOptions.stackGuard = TC::StackGuard::Page;
    workerOptions.idlePolicy = TC::IdlePolicy::SpinThenSleep;
    workerOptions.hooks = MakeHooks(profiler);
    // [/guide:setup]
    // [guide:chrome-trace]
    AddCoroutineHooks(hostOptions.hooks, zones);
    AddCoroutineHooks(workerOptions.hooks, zones);
    if (tracePath) // record every zone as well, per thread, for a Chrome trace
    {
        trace.Attach(hostOptions.hooks);
        trace.Attach(workerOptions.hooks);
    }
    // [/guide:chrome-trace]

    std::vector<float> expectedPosition, expectedVelocity;
    std::vector<double> frameMs;
    long longJobUnits = 0;
    {
        TC::Scheduler host(hostOptions);
        TC::Scheduler workers(workerOptions);
        Game game(host, workers);
        for (int i = 0; i < kEntities; ++i)
        {
            game.world.position[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
            game.world.velocity[i] = static_cast<float>(i % 13) / 13.0f;
        }
        const World initial = game.world;

        TC::JoinHandle longJob = workers.Start(
            [&game] { LongJob(game); }, {.name = "long-job", .stackSize = TC::StackSize::Large});

        // [guide:frame-loop]
        for (int frame = 0; frame < kFrames; ++frame)
        {
            const auto frameStart = Clock::now();
            game.frameStarted.Set();
            bool applied = false;
            host.Start(
                    [&game, frame, &applied]
                    {
                        RunFrame(game, frame);
                        applied = true;
                    },
                    {.name = "frame", .priority = TC::Priority::High})
                .Detach();

            // This frame's work first, High only, in slices (input or rendering could go between).
            while (!applied)
            {
                const TC::PumpResult high = host.RunFor(kSlice, TC::Priority::High);
                if (applied || high.ran != 0)
                    continue;
                // The frame task waits on the workers: do background work meanwhile, or sleep
                // until a worker hands something back (a submit wakes WaitForWork).
                if (host.RunFor(kSlice, TC::Priority::Normal).ran == 0)
                    host.WaitForWork(kSlice);
            }
            frameMs.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - frameStart).count());

            // The rest of the tick goes to background work; with none, the host sleeps.
            const auto nextTick = frameStart + kTick;
            while (Clock::now() < nextTick)
            {
                if (host.RunFor(nextTick - Clock::now(), TC::Priority::Normal).ran == 0)
                    host.WaitForWork(nextTick - Clock::now());
            }
        }
        // [/guide:frame-loop]

        // [guide:drain]
        // Stop the long job, then let in-flight background work land before checking it.
        workers.RequestShutdown();
        game.frameStarted.Set(); // in case the long job waits for a frame
        longJob.Join();          // a wait on the host thread keeps pumping the host scheduler
        const auto drainUntil = Clock::now() + 5s;
        const int expectedAssets = (kFrames + kStreamEvery - 1) / kStreamEvery;
        while ((game.telemetryFrames.size() < kFrames ||
                game.streamedAssets.size() < static_cast<std::size_t>(expectedAssets)) &&
               Clock::now() < drainUntil)
        {
            if (host.RunUntilIdle().ran == 0)
                host.WaitForWork(1ms);
        }
        // [/guide:drain]

        // [guide:trim]
        // The long job's large stack, and whatever a burst left beyond the workers' own caches,
        // sit in the schedulers' pools: give them back to the game's allocator now, as a level
        // change would. The pools refill as tasks end, up to SchedulerOptions::stackPoolBytes.
        const std::size_t usedBefore = stacks.Used();
        const std::size_t trimmed = workers.TrimStackPool() + host.TrimStackPool();
        Check(trimmed >= TC::StackSize::Large && stacks.Used() <= usedBefore - trimmed,
              "TrimStackPool gave the pooled stacks back");
        // [/guide:trim]

        // Every frame applied once, in order, complete; the world matches a serial replay.
        std::vector<int> expectedFrames(kFrames);
        for (int i = 0; i < kFrames; ++i)
            expectedFrames[i] = i;
        Check(game.appliedFrames == expectedFrames, "every frame applied once, in order");
        Check(game.outOfOrder == 0, "every frame's chunks complete and in order");
        Check(game.misplaced == 0, "host-pinned work ran on the main thread");
        std::vector<int> telemetry = game.telemetryFrames;
        std::sort(telemetry.begin(), telemetry.end());
        Check(telemetry == expectedFrames, "telemetry for every frame, once");
        Check(game.streamedAssets.size() == static_cast<std::size_t>(expectedAssets),
              "every streaming request landed");
        for (std::size_t i = 0; i < game.streamedAssets.size(); ++i)
            Check(game.streamedAssets[i] == static_cast<int>(i) * kStreamEvery,
                  "streamed assets in request order");
        Check(game.onMainByMistake == 0, "worker work ran on the workers");
        Check(coroutineResumptions == 2 * kExpectedAssets && resumedOutsideZone == 0,
              "every coroutine resumption ran inside a coroutine zone");
        longJobUnits = game.longJobUnits.load();
        Check(longJobUnits > 0, "the long job ran until the shutdown request");

        World replay = initial;
        World next = initial;
        for (int frame = 0; frame < kFrames; ++frame)
        {
            Step(replay, 0, kEntities, next.position.data(), next.velocity.data());
            replay = next;
        }
        expectedPosition = replay.position;
        expectedVelocity = replay.velocity;
        Check(game.world.position == expectedPosition && game.world.velocity == expectedVelocity,
              "the world matches a serial replay");
        Check(stacks.Stacks() > 0, "stacks come from the game's allocator");
        float particle = 1.0f;
        for (int frame = 0; frame < kFrames; ++frame)
            particle = particle * 0.99f + 0.01f;
        Check(std::all_of(game.particles.begin(), game.particles.end(),
                          [particle](float p) { return p == particle; }),
              "ParallelFor aged every particle once a frame");
        bool decided = true;
        for (std::size_t agent = 0; agent < kAgents; ++agent)
            decided = decided && game.decisions[agent] == Decide(agent, kFrames - 1);
        Check(decided, "every agent's bulk-started job ran in the last frame");
    }
    Check(stacks.Used() == 0 && stacks.Stacks() == 0, "every stack went back to the allocator");
    Check(profiler.threadsStarted == 2 && profiler.threadsStopped == 2,
          "threadStart/threadStop once per worker");
    Check(profiler.enters == profiler.leaves && profiler.unpaired == 0,
          "taskEnter/taskLeave in matched pairs");
    Check(zones.enters == zones.leaves && zones.unpaired == 0 && zones.enters >= 2 * kExpectedAssets,
          "coroutineEnter/coroutineLeave in matched pairs, one per resumption at least");
    if (tracePath)
    {
        Check(trace.Write(tracePath), "the Chrome trace was written");
        std::printf("trace: %zu events written to %s\n", trace.Events(), tracePath);
    }

    std::vector<double> sorted = frameMs;
    std::sort(sorted.begin(), sorted.end());
    const double total = std::chrono::duration<double>(Clock::now() - programStart).count();
    std::printf("game-loop: %d frames of %d entities in %d chunks, tick %lld ms, %.2f s in all\n",
                kFrames, kEntities, kChunks, static_cast<long long>(kTick.count()), total);
    std::printf(
        "frame time (start to results applied), ms: min %.3f  median %.3f  p99 %.3f  max %.3f\n",
        sorted.front(), Percentile(sorted, 0.5), Percentile(sorted, 0.99), sorted.back());
    std::printf("tasks entered %ld times; long-job units %ld\n", profiler.enters.load(),
                longJobUnits);
    if (failures != 0)
    {
        std::printf("game-loop: %d check(s) FAILED\n", failures);
        return EXIT_FAILURE;
    }
    std::printf("game-loop: all checks passed\n");
    return EXIT_SUCCESS;
}
