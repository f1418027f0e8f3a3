// rw-lock: the writer-preferring RwLock of the "Many waiters with timeouts" guide, used by
// tasks, threads and coroutines, its timeouts and writer preference checked, driven by the test
// kit over seeded runs, and a million lock operations. Prints what it did and exits non-zero if
// a check fails. Optional argument: how many lock operations the last part makes.

#include "primitives/RwLock.h"
#include "primitives/SampleChecks.h"

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Testing.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace std::chrono_literals;
using Samples::RwLock;
using Samples::Expect;

namespace
{
// Two counters a writer moves together; a reader must never see them differ.
struct Guarded
{
    RwLock lock;
    std::int64_t a = 0;
    std::int64_t b = 0;
};

// [guide:rw-lock-use]
void Write(Guarded& g)
{
    g.lock.Lock();
    ++g.a;
    ++g.b;
    g.lock.Unlock();
}

void Read(Guarded& g)
{
    g.lock.LockShared();
    Expect(g.a == g.b, "a reader sees both counters moved together");
    g.lock.UnlockShared();
}

TC::Strands::Task<void> WriteAsync(Guarded& g)
{
    co_await g.lock.LockAsync();
    ++g.a;
    ++g.b;
    g.lock.Unlock();
}

TC::Strands::Task<void> ReadAsync(Guarded& g)
{
    co_await g.lock.LockSharedAsync();
    Expect(g.a == g.b, "a reader sees both counters moved together");
    g.lock.UnlockShared();
}
// [/guide:rw-lock-use]

TC::Strands::DetachedTask WriteAndReadInCoroutine(TC::Scheduler& scheduler, Guarded& g, int rounds,
                                         std::atomic<int>& done)
{
    co_await scheduler.Schedule();
    for (int i = 0; i < rounds; ++i)
    {
        co_await WriteAsync(g);
        co_await ReadAsync(g);
    }
    done.fetch_add(1);
}

// Rounds of one write and one read from each of a task, a thread and a coroutine.
void KindsTogether(std::int64_t operations, const char* what)
{
    const int rounds = static_cast<int>(operations / 6);
    TC::Scheduler scheduler(2);
    Guarded g;
    std::atomic<int> done{0};
    auto both = [&] {
        for (int i = 0; i < rounds; ++i)
        {
            Write(g);
            Read(g);
        }
    };
    auto task = scheduler.Start(both);
    std::thread thread(both);
    WriteAndReadInCoroutine(scheduler, g, rounds, done);
    task.Join();
    thread.join();
    while (done.load() < 1)
        std::this_thread::sleep_for(1ms);
    std::printf("%s: %lld lock operations\n", what, static_cast<long long>(6LL * rounds));
    Expect(g.a == 3LL * rounds && g.b == g.a, "every write counted once");
}

void TimeoutsAndWriterPreference()
{
    RwLock lock;
    lock.LockShared();
    std::thread([&] { Expect(!lock.Lock(5ms), "Lock times out while a reader holds it"); }).join();
    Expect(lock.TryLockShared(), "readers share it");
    lock.UnlockShared();
    std::atomic<bool> writerIn{false};
    std::thread writer([&] {
        Expect(lock.Lock(5s), "the writer gets it once the reader leaves");
        writerIn = true;
        lock.Unlock();
    });
    while (lock.TryLockShared()) // until the writer waits: then new readers wait too
    {
        lock.UnlockShared();
        std::this_thread::sleep_for(100us);
    }
    Expect(!writerIn.load(), "the writer still waits for the first reader");
    std::thread([&] { Expect(!lock.LockShared(5ms), "a new reader waits behind a waiting writer"); }).join();
    lock.UnlockShared();
    writer.join();
    Expect(writerIn.load() && lock.TryLock(), "free again once the writer left");
    lock.Unlock();
    std::printf("timeouts and writer preference: checked\n");
}

void Scenario(TC::Testing::Context& ctx)
{
    auto& g = ctx.Make<Guarded>();
    for (int i = 0; i < 2; ++i)
    {
        ctx.Spawn(
            "writer", [&] { for (int n = 0; n < 5; ++n) Write(g); },
            [&]() -> TC::Strands::Task<void> { for (int n = 0; n < 5; ++n) co_await WriteAsync(g); });
        ctx.Spawn(
            "reader", [&] { for (int n = 0; n < 5; ++n) Read(g); },
            [&]() -> TC::Strands::Task<void> { for (int n = 0; n < 5; ++n) co_await ReadAsync(g); });
    }
    ctx.AtEnd([&] { ctx.Check(g.a == 10 && g.b == 10, "every write counted once"); });
}
} // namespace

int main(int argc, char** argv)
{
    TC::EnableTimers();
    KindsTogether(6000, "three kinds");
    TimeoutsAndWriterPreference();

    Samples::RunTestKit(Scenario);

    KindsTogether(argc > 1 ? std::atoll(argv[1]) : 1'000'000, "under load");
    return Samples::Verdict();
}
