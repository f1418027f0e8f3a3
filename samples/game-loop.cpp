// game-loop: a fixed-step game loop on the main thread that embeds ConcurrentTasks the way an
// engine does. The main thread pumps its own scheduler (no threads of its own) within a per-frame
// budget; a second scheduler has two workers. Each frame fans the simulation out to the workers,
// ages particles with a ParallelFor, starts the agents' jobs as one bulk, runs the animation's
// job graph, applies the results on the main thread, and hands background work (telemetry,
// streaming, a long job) to lower priority.
// It prints frame-time percentiles, how far RunFor turns overran, jobs per second and resident
// memory growth, and checks that every frame's results arrived complete and in order; it exits
// non-zero if anything is off. With --trace FILE it also writes the run's task and coroutine
// zones as a Chrome trace (open it in ui.perfetto.dev).

#include "support/Async.h"
#include "support/BudgetStackAllocator.h"
#include "support/ChromeTrace.h"
#include "support/FrameArena.h"
#include "support/FrameStats.h"
#include "support/GameLoopHooks.h"

#include <TC/Core.h>
#include <TC/Strands/FrameAllocator.h>
#include <TC/Strands/SyncRun.h>
#include <TC/Strands/Task.h>
#include <TC/Synchronization/AutoResetEvent_s.h>
#include <TC/Synchronization/Future.h>
#include <TC/Synchronization/ManualResetEvent.h>

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
#include <stdexcept>
#include <stop_token>
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
int frames = 600; // --frames N
constexpr int kEntities = 8192;
constexpr int kChunks = 8;
constexpr int kChunkSize = kEntities / kChunks;
constexpr float kDt = 1.0f / 240.0f;
constexpr auto kTick = 4ms;      // fixed step: one frame every 4 ms
constexpr auto kSlice = 500us;   // how long the host runs work before looking up again
constexpr int kStreamEvery = 30; // a streaming request every 30 frames
constexpr int kLongJobUnits = 8; // units of the long job per frame
constexpr std::size_t kParticles = 100'000; // aged by a ParallelFor each frame
constexpr std::size_t kAgents = 64;          // one job each per frame, started as one bulk
constexpr int kWarmFrames = 60;             // resident memory is compared from here on

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

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
    std::atomic<long> particleChunks{0}; // ParallelFor chunks run, for the jobs-per-second count
    // The animation's job graph (BuildAnimation): built once, run every frame.
    TC::JobGraph animation;
    int animatedFrame = -1; // written by the frame task before each run
    std::vector<long> poses = std::vector<long>(kAgents, 0);
    std::vector<long> skins = std::vector<long>(kAgents, 0);
    long visible = 0;
    std::vector<long> drawKeys; // one per frame, by the graph's last job
    // The level's streaming: a load waits for it and is cancelled when the level changes.
    TC::Synchronization::ManualResetEvent levelStreamed; // never set: the disk is slow today
    std::stop_source levelChange;
    std::atomic<int> loadsCancelled{0};
    // This frame's task blocks and coroutine frames; emptied at the end of each frame.
    FrameArena frameArena{1 << 20};
    int arenaLeaks = 0; // frames whose arena still had blocks out at their end
    std::size_t arenaPeak = 0; // the most one frame took from it
    std::thread::id audioThread; // the pinned audio job's: written by it only, one frame at a time
    int audioMoved = 0;
    bool OnHost() const { return ThisThreadId() == mainThread; }
};

long ExpectedPose(std::size_t agent, int frame)
{
    return static_cast<long>(agent) * 3 + frame;
}

// [guide:animation-graph]
// Built once: each agent's pose, then its skin; culling after every skin; the draw list after
// culling. A job begins once the jobs before it ended and sees what they wrote. Running it takes
// no task and no stack per job: the frame task and one helper task per worker run the jobs.
void BuildAnimation(Game& game)
{
    std::vector<TC::JobGraph::Node> skins;
    for (std::size_t agent = 0; agent < kAgents; ++agent)
    {
        TC::JobGraph::Node pose = game.animation.Add(
            [&game, agent] { game.poses[agent] = ExpectedPose(agent, game.animatedFrame); }, "pose");
        TC::JobGraph::Node skin = game.animation.Add(
            [&game, agent] { game.skins[agent] = game.poses[agent] * 2; }, "skin");
        game.animation.Precede(pose, skin);
        skins.push_back(skin);
    }
    TC::JobGraph::Node cull = game.animation.Add(
        [&game]
        {
            game.visible = 0;
            for (long skin : game.skins)
                game.visible += skin;
        },
        "cull");
    for (TC::JobGraph::Node skin : skins)
        game.animation.Precede(skin, cull);
    TC::JobGraph::Node draw =
        game.animation.Add([&game] { game.drawKeys.push_back(game.visible); }, "draw-list");
    game.animation.Precede(cull, draw);
}

// Each frame, from the frame task, which suspends once no job is left for it to run.
void Animate(Game& game, int frame)
{
    game.animatedFrame = frame;
    game.animation.Run(game.workers, {.name = "animation", .priority = TC::Priority::High});
}
// [/guide:animation-graph]

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
                    [&particles = game.particles, &chunks = game.particleChunks](TC::IndexRange chunk)
                    {
                        for (std::size_t i = chunk.begin; i < chunk.end; ++i)
                            particles[i] = particles[i] * 0.99f + 0.01f;
                        chunks.fetch_add(1, std::memory_order_relaxed);
                    },
                    {.name = "particles", .priority = TC::Priority::High});
}
// [/guide:parallel-for]

int Decide(std::size_t agent, int frame)
{
    return static_cast<int>((agent * 2654435761u + static_cast<std::size_t>(frame)) % 7);
}

// An agent's decision as a coroutine, as a behaviour-tree step would be.
TC::Strands::Task<int> DecideAsync(std::size_t agent, int frame)
{
    co_return Decide(agent, frame);
}

// [guide:bulk-start]
// Every agent thinks each frame: one job per agent, started as one bulk start -- their blocks
// taken together, queued with one enqueue and one wake-up -- instead of a Start each. Each job
// is a task as Start makes it (name, priority, hooks, its JoinHandle). Their task blocks, and the
// coroutine frames each job creates, come from this frame's arena.
void ThinkAgents(Game& game, int frame)
{
    std::vector<TC::JoinHandle> jobs = game.workers.StartBulk(
        kAgents,
        [&game, frame](std::size_t agent)
        {
            TC::Strands::FrameAllocatorScope scope(game.frameArena); // ends before any wait
            game.decisions[agent] = TC::Strands::SyncRun(DecideAsync(agent, frame));
        },
        {.name = "agent", .priority = TC::Priority::High, .allocator = &game.frameArena});
    for (TC::JoinHandle& job : jobs)
        job.Join(); // the frame task suspends while the jobs run; the host keeps pumping
}
// [/guide:bulk-start]

// [guide:pinned]
// The audio mix talks to a device whose API is bound to one thread: its job is pinned to worker
// 0 (started and resumed only there) and Critical, ahead of the frame's own High work.
TC::JoinHandle StartAudioMix(Game& game, int frame)
{
    return game.workers.Start(
        [&game, frame]
        {
            const std::thread::id here = ThisThreadId();
            if (frame == 0)
                game.audioThread = here;
            game.audioMoved += here == game.audioThread ? 0 : 1;
        },
        {.name = "audio-mix",
         .priority = TC::Priority::Critical,
         .worker = 0,
         .allocator = &game.frameArena});
}
// [/guide:pinned]

// [guide:fan-out]
// One frame, run as a High task on the host: fan the simulation out to the workers, wait for
// it (this task suspends; the host thread goes on pumping), then apply it on the main thread.
void RunFrame(Game& game, int frame)
{
    TC::JoinHandle audio = StartAudioMix(game, frame);
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
    Animate(game, frame);
    audio.Join();
    game.arenaPeak = std::max(game.arenaPeak, game.frameArena.Used());
    try
    {
        game.frameArena.Reset(); // every job of the frame was joined: nothing of it is left
    }
    catch (const std::logic_error&)
    {
        ++game.arenaLeaks;
    }
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

// [guide:cancel]
// An asset load the player may walk away from. It waits with a timed form, which a stop request
// ends (false; UntilStopped sets no deadline), so a level change cancels it wherever it waits --
// no flag to poll, no event to set for it.
void LoadLevelAsset(Game& game)
{
    if (!game.levelStreamed.Wait(TC::Duration::UntilStopped()))
    {
        if (TC::StopRequested()) // else a deadline would have passed: there is none here
            ++game.loadsCancelled;
        return; // the wait took nothing: the event may go as soon as we are out
    }
    // ... register the streamed asset ...
}

TC::JoinHandle StartLevelAssetLoad(Game& game)
{
    return game.workers.Start([&game] { LoadLevelAsset(game); },
                              {.name = "level-asset",
                               .priority = TC::Priority::Low,
                               .stopToken = game.levelChange.get_token()});
}
// [/guide:cancel]

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

} // namespace

int main(int argc, char** argv)
{
    const char* tracePath = nullptr; // --trace FILE
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
            tracePath = argv[++i];
        else if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc &&
                 std::atoi(argv[i + 1]) > kWarmFrames)
            frames = std::atoi(argv[++i]);
        else
        {
            std::fprintf(stderr, "usage: %s [--trace FILE] [--frames N (over %d)]\n", argv[0],
                         kWarmFrames);
            return EXIT_FAILURE;
        }
    }
    const int expectedAssets = (frames + kStreamEvery - 1) / kStreamEvery;
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
    std::vector<double> overrunsUs;
    double loopSeconds = 0;
    double residentGrowth = 0;
    double jobs = 0;
    long longJobUnits = 0;
    std::size_t arenaPeak = 0;
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
        BuildAnimation(game);
        game.drawKeys.reserve(frames);
        game.appliedFrames.reserve(frames);
        game.telemetryFrames.reserve(frames);
        frameMs.reserve(frames);
        MeteredPump pump(host);
        std::size_t warmResident = 0;
        const auto loopStart = Clock::now();

        TC::JoinHandle levelAsset = StartLevelAssetLoad(game);
        TC::JoinHandle longJob = workers.Start(
            [&game] { LongJob(game); },
            {.name = "long-job", .priority = TC::Priority::Low, .stackSize = TC::StackSize::Large});

        // [guide:frame-loop]
        for (int frame = 0; frame < frames; ++frame)
        {
            const auto frameStart = Clock::now();
            if (frame == kWarmFrames)
                warmResident = ResidentBytes();
            if (frame == frames / 2)
            {
                game.levelChange.request_stop(); // the parked load's wait returns false now
                levelAsset.Join(); // the host thread's wait pumps the host meanwhile
            }
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
                const TC::PumpResult high = pump.RunFor(kSlice, TC::Priority::High);
                if (applied || high.ran != 0)
                    continue;
                // The frame task waits on the workers: do background work meanwhile, or sleep
                // until a worker hands something back (a submit wakes WaitForWork).
                if (pump.RunFor(kSlice, TC::Priority::Low).ran == 0)
                    host.WaitForWork(kSlice);
            }
            frameMs.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - frameStart).count());

            // The rest of the tick goes to background work; with none, the host sleeps.
            const auto nextTick = frameStart + kTick;
            while (Clock::now() < nextTick)
            {
                if (pump.RunFor(nextTick - Clock::now(), TC::Priority::Low).ran == 0)
                    host.WaitForWork(nextTick - Clock::now());
            }
        }
        // [/guide:frame-loop]
        loopSeconds = std::chrono::duration<double>(Clock::now() - loopStart).count();
        residentGrowth = static_cast<double>(ResidentBytes()) - static_cast<double>(warmResident);
        overrunsUs = pump.OverrunsUs();
        // Jobs: per frame the frame task, the audio mix, the simulation's chunks, the agents, the
        // graph's jobs and telemetry; besides, the particles' chunks and the streaming requests.
        jobs = static_cast<double>(frames) *
                   static_cast<double>(2 + kChunks + kAgents + game.animation.Size() + 1) +
               static_cast<double>(game.particleChunks.load() + expectedAssets);

        // [guide:drain]
        // Stop the long job, then let in-flight background work land before checking it.
        workers.RequestShutdown();
        game.frameStarted.Set(); // in case the long job waits for a frame
        longJob.Join();          // a wait on the host thread keeps pumping the host scheduler
        const auto drainUntil = Clock::now() + 5s;
        while ((game.telemetryFrames.size() < static_cast<std::size_t>(frames) ||
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
        std::vector<int> expectedFrames(frames);
        for (int i = 0; i < frames; ++i)
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
        Check(coroutineResumptions == 2 * expectedAssets && resumedOutsideZone == 0,
              "every coroutine resumption ran inside a coroutine zone");
        longJobUnits = game.longJobUnits.load();
        arenaPeak = game.arenaPeak;
        Check(longJobUnits > 0, "the long job ran until the shutdown request");
        Check(game.audioMoved == 0 && game.audioThread != std::thread::id() &&
                  game.audioThread != game.mainThread,
              "the pinned audio job ran on one worker every frame");
        Check(game.arenaLeaks == 0 && game.arenaPeak > kAgents * sizeof(void*),
              "each frame's jobs and frames came from its arena, all back at its end");
        Check(game.loadsCancelled == 1, "the level change cancelled the parked asset load");

        World replay = initial;
        World next = initial;
        for (int frame = 0; frame < frames; ++frame)
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
        for (int frame = 0; frame < frames; ++frame)
            particle = particle * 0.99f + 0.01f;
        Check(std::all_of(game.particles.begin(), game.particles.end(),
                          [particle](float p) { return p == particle; }),
              "ParallelFor aged every particle once a frame");
        bool decided = true;
        for (std::size_t agent = 0; agent < kAgents; ++agent)
            decided = decided && game.decisions[agent] == Decide(agent, frames - 1);
        Check(decided, "every agent's bulk-started job ran in the last frame");
        bool drawn = game.drawKeys.size() == static_cast<std::size_t>(frames);
        for (int frame = 0; drawn && frame < frames; ++frame)
        {
            long expected = 0;
            for (std::size_t agent = 0; agent < kAgents; ++agent)
                expected += 2 * ExpectedPose(agent, frame);
            drawn = game.drawKeys[frame] == expected;
        }
        Check(drawn, "the animation graph ran every job once a frame, each after its prerequisites");
    }
    Check(stacks.Used() == 0 && stacks.Stacks() == 0, "every stack went back to the allocator");
    Check(profiler.threadsStarted == 2 && profiler.threadsStopped == 2,
          "threadStart/threadStop once per worker");
    Check(profiler.enters == profiler.leaves && profiler.unpaired == 0,
          "taskEnter/taskLeave in matched pairs");
    Check(zones.enters == zones.leaves && zones.unpaired == 0 && zones.enters >= 2 * expectedAssets,
          "coroutineEnter/coroutineLeave in matched pairs, one per resumption at least");
    // Steady state allocates nothing that stays: the schedulers pool stacks and task blocks.
    // (Sanitizers keep freed memory in quarantine and shadow; a trace keeps its events.)
    if (!kSanitized && !tracePath)
        Check(residentGrowth < 8.0 * 1024 * 1024, "resident memory flat after the warm-up frames");
    if (tracePath)
    {
        Check(trace.Write(tracePath), "the Chrome trace was written");
        std::printf("trace: %zu events written to %s\n", trace.Events(), tracePath);
    }

    const double total = std::chrono::duration<double>(Clock::now() - programStart).count();
    std::printf("game-loop: %d frames of %d entities in %d chunks, tick %lld ms, %.2f s in all\n",
                frames, kEntities, kChunks, static_cast<long long>(kTick.count()), total);
    std::printf("frame time (start to results applied), ms: p50 %.3f  p99 %.3f  max %.3f\n",
                Percentile(frameMs, 0.5), Percentile(frameMs, 0.99), Percentile(frameMs, 1.0));
    std::printf("RunFor overrun past its budget, us: p50 %.1f  p99 %.1f  max %.1f (%zu turns)\n",
                Percentile(overrunsUs, 0.5), Percentile(overrunsUs, 0.99),
                Percentile(overrunsUs, 1.0), overrunsUs.size());
    std::printf("jobs: %.0f in %.2f s, %.0f per second\n", jobs, loopSeconds, jobs / loopSeconds);
    std::printf("resident memory growth from frame %d to the end: %+.1f KiB%s\n", kWarmFrames,
                residentGrowth / 1024.0, tracePath ? " (the trace's buffers included)" : "");
    std::printf("tasks entered %ld times; long-job units %ld; frame arena peak %zu KiB\n",
                profiler.enters.load(), longJobUnits, arenaPeak / 1024);
    if (failures != 0)
    {
        std::printf("game-loop: %d check(s) FAILED\n", failures);
        return EXIT_FAILURE;
    }
    std::printf("game-loop: all checks passed\n");
    return EXIT_SUCCESS;
}
