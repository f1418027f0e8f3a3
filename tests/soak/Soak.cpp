// tc_soak: runs every primitive and the strands under random load for a chosen time and counts
// what it did and every anomaly it saw (none allowed: the exit status is then non-zero).
// Usage: tc_soak [--seconds N] [--seed S] [--only SCENARIO] [--keep-objects]
//
// Each round picks one scenario at random with random sizes and checks its invariant: counts add
// up, a lock is never held twice, a strand never runs two tasks at once, every waiter passes. A
// watchdog turns a round that does not finish in 60 s (a lost wake-up) into an anomaly and ends
// the run. One scenario is the fuzz interpreter (tests/fuzz) on random programs.

#include "../fuzz/FuzzProgram.h"

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization.h>
#include <TC/Synchronization/Future.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using namespace TC::Synchronization;
using namespace std::chrono_literals;

namespace
{
std::atomic<std::uint64_t> gOperations{0};
std::atomic<std::uint64_t> gAnomalies{0};
std::atomic<std::uint64_t> gRoundsDone{0};
std::atomic<const char*> gCurrent{"none"};

// The primitives a round makes, freed right after the round (what their documented lifetimes
// allow: by a waiter once its wait returned). --keep-objects keeps them until the end of the run
// instead, to tell a lifetime bug from any other when chasing an anomaly. (Until the re-checks
// in flight were counted, freeing at once made ThreadSanitizer report a vptr race in
// ~SuspendableBase: a waiter returned while its own re-check was still inside the object.)
std::vector<std::shared_ptr<void>> gGraveyard;

template <class T, class... Args>
T& Keep(Args&&... args)
{
    auto object = std::make_shared<T>(std::forward<Args>(args)...);
    gGraveyard.push_back(object);
    return *object;
}

void Anomaly(const char* scenario, const std::string& what)
{
    gAnomalies.fetch_add(1);
    std::fprintf(stderr, "tc_soak: ANOMALY in %s: %s\n", scenario, what.c_str());
}

void Expect(bool ok, const char* scenario, const std::string& what)
{
    if (!ok)
        Anomaly(scenario, what);
}

struct Env
{
    Scheduler& workers;
    std::mt19937_64& random;
    int Pick(int lo, int hi)
    {
        return lo + static_cast<int>(random() % static_cast<unsigned>(hi - lo + 1));
    }
};

// Runs `body(i)` as `tasks` tasks on the workers and `threads` converted threads; joins all.
template <class Body>
void Spread(Env& env, int tasks, int threads, Body body)
{
    std::vector<JoinHandle> handles;
    std::vector<std::thread> pool;
    for (int i = 0; i < tasks; ++i)
        handles.push_back(env.workers.Start([&body, i] { body(i); }));
    for (int i = 0; i < threads; ++i)
        pool.emplace_back([&body, i, tasks] { body(tasks + i); });
    for (JoinHandle& handle : handles)
        handle.Join();
    for (std::thread& thread : pool)
        thread.join();
}

void MutexScenario(Env& env)
{
    Mutex& mutex = Keep<Mutex>();
    long counter = 0;
    int holders = 0;
    const int tasks = env.Pick(2, 32), threads = env.Pick(0, 3), rounds = env.Pick(100, 2000);
    std::atomic<long> timedOut{0};
    Spread(env, tasks, threads,
           [&](int i)
           {
               for (int r = 0; r < rounds; ++r)
               {
                   if ((r + i) % 7 == 0)
                   {
                       if (!mutex.TryLockFor(std::chrono::microseconds(r % 50)))
                       {
                           timedOut.fetch_add(1);
                           continue;
                       }
                   }
                   else
                       mutex.lock();
                   Expect(++holders == 1, "mutex", "two holders at once");
                   ++counter;
                   --holders;
                   mutex.unlock();
               }
           });
    const long total = static_cast<long>(tasks + threads) * rounds;
    Expect(counter + timedOut.load() == total, "mutex", "increments lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(total));
}

void ConditionScenario(Env& env)
{
    Mutex& mutex = Keep<Mutex>();
    ConditionVariable& cv = Keep<ConditionVariable>();
    std::deque<int> queue;
    bool closed = false;
    const int producers = env.Pick(1, 8), consumers = env.Pick(1, 8), each = env.Pick(100, 2000);
    std::atomic<long> sum{0}, count{0};
    Spread(env, producers + consumers, 1,
           [&](int i)
           {
               if (i < producers)
               {
                   for (int v = 1; v <= each; ++v)
                   {
                       std::unique_lock lock(mutex);
                       queue.push_back(v);
                       cv.NotifyOne();
                   }
                   return;
               }
               if (i == producers + consumers) // the thread: closes once every producer is done
               {
                   return;
               }
               for (;;)
               {
                   std::unique_lock lock(mutex);
                   if (!cv.WaitFor(lock, 5ms, [&] { return !queue.empty() || closed; }))
                       continue;
                   if (queue.empty())
                       return;
                   sum.fetch_add(queue.front());
                   count.fetch_add(1);
                   queue.pop_front();
                   if (count.load() == static_cast<long>(producers) * each)
                   {
                       closed = true;
                       cv.NotifyAll();
                   }
               }
           });
    Expect(count.load() == static_cast<long>(producers) * each, "condition", "items lost");
    Expect(sum.load() == static_cast<long>(producers) * each * (each + 1) / 2, "condition",
           "sum off");
    gOperations.fetch_add(static_cast<std::uint64_t>(count.load()) * 2);
}

void SemaphoreScenario(Env& env)
{
    const int permits = env.Pick(1, 4);
    Semaphore& semaphore = Keep<Semaphore>(permits);
    std::atomic<int> inside{0};
    std::atomic<long> passes{0};
    const int tasks = env.Pick(2, 32), threads = env.Pick(0, 2), rounds = env.Pick(50, 1000);
    Spread(env, tasks, threads,
           [&](int i)
           {
               for (int r = 0; r < rounds; ++r)
               {
                   if ((r + i) % 5 == 0)
                   {
                       if (!semaphore.Acquire(std::chrono::microseconds(r % 100)))
                           continue;
                   }
                   else
                       semaphore.Acquire();
                   Expect(inside.fetch_add(1) < permits, "semaphore", "more holders than permits");
                   passes.fetch_add(1);
                   if (r % 16 == 0)
                       YieldTask();
                   inside.fetch_sub(1);
                   semaphore.Release();
               }
           });
    Expect(semaphore.Available() == permits, "semaphore", "permits do not add up");
    gOperations.fetch_add(static_cast<std::uint64_t>(passes.load()) * 2);
}

void ChannelScenario(Env& env)
{
    Channel<long>& channel = Keep<Channel<long>>(static_cast<std::size_t>(env.Pick(0, 16)));
    const int producers = env.Pick(1, 8), consumers = env.Pick(1, 8), each = env.Pick(100, 5000);
    std::atomic<long> sum{0}, count{0};
    std::atomic<int> producing{producers};
    Spread(env, producers + consumers, 0,
           [&](int i)
           {
               if (i < producers)
               {
                   for (long v = 1; v <= each; ++v)
                       Expect(channel.Send(v), "channel", "send refused before close");
                   if (producing.fetch_sub(1) == 1)
                       channel.Close();
                   return;
               }
               while (auto value = channel.Receive())
               {
                   sum.fetch_add(*value);
                   count.fetch_add(1);
               }
           });
    Expect(count.load() == static_cast<long>(producers) * each, "channel", "values lost");
    Expect(sum.load() == static_cast<long>(producers) * each * (each + 1) / 2, "channel",
           "sum off");
    gOperations.fetch_add(static_cast<std::uint64_t>(count.load()) * 2);
}

void MailboxRounds(Env& env, Mailbox<int>& ping, Mailbox<int>& pong)
{
    const int rounds = env.Pick(100, 5000);
    std::atomic<int> timeouts{0};
    auto server = env.workers.Start(
        [&]
        {
            for (int r = 0; r < rounds; ++r)
                pong.Put(ping.Take() + 1);
        });
    std::thread client(
        [&]
        {
            for (int r = 0; r < rounds; ++r)
            {
                ping.Put(r);
                std::optional<int> reply;
                while (!(reply = pong.Take(std::chrono::microseconds(200))))
                    timeouts.fetch_add(1);
                Expect(*reply == r + 1, "mailbox", "wrong reply");
            }
        });
    client.join();
    server.Join();
    gOperations.fetch_add(static_cast<std::uint64_t>(rounds) * 4);
}

void MailboxScenario(Env& env)
{
    MailboxRounds(env, Keep<Mailbox<int>>(), Keep<Mailbox<int>>());
}

void EventScenario(Env& env)
{
    // A token passed around a ring of tasks by AutoResetEvents; a ManualResetEvent starts it.
    const int ring = env.Pick(2, 16), laps = env.Pick(10, 300);
    auto& events = Keep<std::vector<AutoResetEvent>>(static_cast<std::size_t>(ring));
    ManualResetEvent& start = Keep<ManualResetEvent>();
    ManualResetEvent_s& allDone = Keep<ManualResetEvent_s>();
    std::atomic<long> hops{0};
    std::atomic<int> finished{0};
    std::vector<JoinHandle> handles;
    for (int i = 0; i < ring; ++i)
        handles.push_back(env.workers.Start(
            [&, i]
            {
                start.Wait();
                for (int lap = 0; lap < laps; ++lap)
                {
                    events[static_cast<std::size_t>(i)].Wait();
                    hops.fetch_add(1);
                    events[static_cast<std::size_t>((i + 1) % ring)].Set();
                }
                if (finished.fetch_add(1) == ring - 1)
                    allDone.Set();
            }));
    start.Set();
    events[0].Set();
    Expect(allDone.Wait(60s), "events", "the token ring stalled");
    for (JoinHandle& handle : handles)
        handle.Join();
    Expect(hops.load() == static_cast<long>(ring) * laps, "events", "hops lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(hops.load()) * 2);
}

void PhaseScenario(Env& env)
{
    // Barrier rounds; a Latch opens the first, a WaitGroup waits for the last.
    const int parties = env.Pick(2, 16), phases = env.Pick(5, 100);
    Barrier& barrier = Keep<Barrier>(static_cast<std::size_t>(parties));
    Latch& go = Keep<Latch>(1);
    WaitGroup& group = Keep<WaitGroup>(parties);
    std::atomic<long> arrived{0};
    std::vector<long> perPhase(static_cast<std::size_t>(phases), 0);
    std::atomic<long> phaseErrors{0};
    std::vector<JoinHandle> handles;
    for (int i = 0; i < parties; ++i)
        handles.push_back(env.workers.Start(
            [&]
            {
                go.Wait();
                for (int p = 0; p < phases; ++p)
                {
                    arrived.fetch_add(1);
                    barrier.ArriveAndWait();
                    if (arrived.load() < static_cast<long>(p + 1) * parties)
                        phaseErrors.fetch_add(1); // passed the barrier before everyone arrived
                    barrier.ArriveAndWait();
                }
                group.Done();
            }));
    go.CountDown();
    group.Wait();
    for (JoinHandle& handle : handles)
        handle.Join();
    Expect(phaseErrors.load() == 0, "barrier", "a party passed before all arrived");
    Expect(arrived.load() == static_cast<long>(parties) * phases, "barrier", "arrivals lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(arrived.load()) * 2);
}

void FutureScenario(Env& env)
{
    const int count = env.Pick(10, 500);
    auto& promises = Keep<std::vector<Promise<int>>>(static_cast<std::size_t>(count));
    auto& futures = Keep<std::vector<Future<int>>>();
    for (auto& promise : promises)
        futures.push_back(promise.GetFuture().Then([](int v) { return v * 2; }));
    std::atomic<long> sum{0};
    std::thread setter(
        [&]
        {
            for (int i = 0; i < count; ++i)
                promises[static_cast<std::size_t>(i)].SetValue(i);
        });
    Spread(env, 4, 0,
           [&](int i)
           {
               for (int k = i; k < count; k += 4)
                   sum.fetch_add(futures[static_cast<std::size_t>(k)].Wait());
           });
    setter.join();
    Expect(sum.load() == static_cast<long>(count) * (count - 1), "future", "values lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(count) * 3);
}

void StrandScenario(Env& env)
{
    Strand strand(env.workers);
    long counter = 0; // touched only on the strand
    std::atomic<int> running{0};
    const int posters = env.Pick(1, 6), each = env.Pick(100, 3000);
    Spread(env, posters, 1,
           [&](int)
           {
               for (int k = 0; k < each; ++k)
                   strand.Post(
                       [&]
                       {
                           Expect(running.fetch_add(1) == 0, "strand", "two tasks at once");
                           ++counter;
                           running.fetch_sub(1);
                       });
           });
    strand.WaitIdle();
    Expect(counter == static_cast<long>(posters + 1) * each, "strand", "posts lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(counter));
}

void KeyedScenario(Env& env)
{
    KeyedStrands<int> strands(env.workers);
    const int keys = env.Pick(1, 64), posters = env.Pick(1, 6), each = env.Pick(100, 3000);
    std::vector<long> counters(static_cast<std::size_t>(keys), 0);
    std::vector<std::atomic<int>> running(static_cast<std::size_t>(keys));
    std::atomic<long> total{0};
    Spread(env, posters, 1,
           [&](int i)
           {
               std::minstd_rand local(static_cast<unsigned>(i) + 1);
               for (int k = 0; k < each; ++k)
               {
                   const int key = static_cast<int>(local() % static_cast<unsigned>(keys));
                   strands.Post(key,
                                [&, key]
                                {
                                    auto& flag = running[static_cast<std::size_t>(key)];
                                    Expect(flag.fetch_add(1) == 0, "keyed",
                                           "two tasks of one key at once");
                                    ++counters[static_cast<std::size_t>(key)];
                                    total.fetch_add(1);
                                    flag.fetch_sub(1);
                                });
               }
           });
    strands.WaitIdle();
    long sum = 0;
    for (long c : counters)
        sum += c;
    Expect(sum == static_cast<long>(posters + 1) * each && total.load() == sum, "keyed",
           "posts lost");
    gOperations.fetch_add(static_cast<std::uint64_t>(sum));
}

void FuzzScenario(Env& env)
{
    const int programs = env.Pick(1, 20);
    for (int p = 0; p < programs; ++p)
    {
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(env.Pick(8, 128)));
        for (auto& byte : bytes)
            byte = static_cast<std::uint8_t>(env.random());
        // The interpreter aborts the process on a broken invariant: that is an anomaly too.
        gOperations.fetch_add(TCFuzz::RunFuzzProgram(bytes.data(), bytes.size()).operations);
    }
}

struct Scenario
{
    const char* name;
    void (*run)(Env&);
};
constexpr Scenario kScenarios[] = {
    {"mutex", MutexScenario},         {"condition", ConditionScenario},
    {"semaphore", SemaphoreScenario}, {"channel", ChannelScenario},
    {"mailbox", MailboxScenario},     {"events", EventScenario},
    {"barrier", PhaseScenario},       {"future", FutureScenario},
    {"strand", StrandScenario},       {"keyed", KeyedScenario},
    {"fuzz", FuzzScenario},
};
constexpr std::size_t kScenarioCount = sizeof kScenarios / sizeof kScenarios[0];
} // namespace

int main(int argc, char** argv)
{
    double seconds = 20;
    const char* only = nullptr; // --only NAME: run that scenario alone (to chase an anomaly)
    bool destroyAtOnce = true; // see gGraveyard
    std::uint64_t seed =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (std::strcmp(argv[i], "--keep-objects") == 0)
            destroyAtOnce = false;
        else
        {
            std::fprintf(
                stderr,
                "usage: tc_soak [--seconds N] [--seed S] [--only SCENARIO] [--keep-objects]\n");
            return 2;
        }
    }
    std::printf("tc_soak: %.0f s, seed %llu\n", seconds, static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    EnableTimers();
    std::mt19937_64 random(seed);
    std::uint64_t perScenario[kScenarioCount] = {};
    std::atomic<bool> done{false};
    std::thread watchdog(
        [&]
        {
            std::uint64_t lastRounds = ~0ull;
            auto lastProgress = std::chrono::steady_clock::now();
            while (!done.load())
            {
                std::this_thread::sleep_for(100ms);
                const std::uint64_t rounds = gRoundsDone.load();
                if (rounds != lastRounds)
                {
                    lastRounds = rounds;
                    lastProgress = std::chrono::steady_clock::now();
                }
                else if (std::chrono::steady_clock::now() - lastProgress > 60s)
                {
                    Anomaly(gCurrent.load(),
                            "a round did not finish in 60 s (lost wake-up or hang)");
                    std::fprintf(stderr, "tc_soak: FAILED after %llu rounds\n",
                                 static_cast<unsigned long long>(rounds));
                    std::_Exit(3);
                }
            }
        });
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    auto nextReport = start + 60s;
    {
        SchedulerOptions options;
        options.workerCount = 4;
        options.name = "soak";
        Scheduler workers(options);
        Env env{workers, random};
        while (std::chrono::steady_clock::now() < end)
        {
            std::size_t pick = random() % kScenarioCount;
            if (only)
                for (pick = 0;
                     pick + 1 < kScenarioCount && std::strcmp(kScenarios[pick].name, only); ++pick)
                {
                }
            gCurrent.store(kScenarios[pick].name);
            kScenarios[pick].run(env);
            ++perScenario[pick];
            if (destroyAtOnce)
                gGraveyard.clear();
            gRoundsDone.fetch_add(1);
            if (std::chrono::steady_clock::now() >= nextReport)
            {
                nextReport += 60s;
                std::printf(
                    "tc_soak: %.0f s: %llu rounds, %llu operations, %llu anomalies\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    static_cast<unsigned long long>(gRoundsDone.load()),
                    static_cast<unsigned long long>(gOperations.load()),
                    static_cast<unsigned long long>(gAnomalies.load()));
                std::fflush(stdout);
            }
        }
    }
    gGraveyard.clear(); // the workers are joined: nothing can touch these any more
    done.store(true);
    watchdog.join();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("tc_soak: ran %.1f s (seed %llu): %llu rounds, %llu operations, %llu anomalies\n",
                elapsed, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(gRoundsDone.load()),
                static_cast<unsigned long long>(gOperations.load()),
                static_cast<unsigned long long>(gAnomalies.load()));
    std::printf("tc_soak: rounds per scenario:");
    for (std::size_t i = 0; i < kScenarioCount; ++i)
        std::printf(" %s %llu", kScenarios[i].name,
                    static_cast<unsigned long long>(perScenario[i]));
    std::printf("\n");
    return gAnomalies.load() == 0 ? 0 : 1;
}
