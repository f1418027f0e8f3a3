// Nested waits on a host thread: a thread that pumps a scheduler without workers and then waits
// (on a Future, a Join) keeps running that scheduler's work while it waits, so work pinned to the
// host cannot deadlock it -- three deep with host-pinned work queued at each level, and deeper.

#include "EmbeddingTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::Promise;
using TC::Testing::Detached;

namespace
{
// What the host thread saw, in order; only the host thread touches it.
struct HostLog
{
    std::thread::id host = TC::Testing::ThisThreadId();
    std::vector<std::string> events;
    int waitDepth = 0; // blocking waits open on the host thread's stack
    int deepest = 0;
    bool offHost = false;

    void Note(std::string event)
    {
        if (TC::Testing::ThisThreadId() != host)
            offHost = true;
        events.push_back(event + "@" + std::to_string(waitDepth));
    }

    template <class T>
    T Wait(Future<T>& future)
    {
        ++waitDepth;
        deepest = std::max(deepest, waitDepth);
        struct Leave
        {
            int& depth;
            ~Leave() { --depth; }
        } leave{waitDepth};
        return future.Wait();
    }
};

// A value computed on a worker scheduler, so host-pinned work also depends on other threads.
Future<int> OnWorkers(TC::Scheduler& workers, int value)
{
    auto [future, promise] = MakeFuture<int>();
    workers
        .Start(
            [p = std::move(promise), value]() mutable
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                p.SetValue(value);
            })
        .Detach();
    return std::move(future);
}

// Level 3: runs on the host inside the level-2 wait; queues a host task, then waits on it.
Detached Level3(TC::Scheduler& host, TC::Scheduler& workers, HostLog& log, Promise<int> done)
{
    co_await host.Schedule();
    log.Note("level3 runs");
    auto [f3, p3] = MakeFuture<int>();
    host.Start(
            [&log, &workers, p = std::move(p3)]() mutable
            {
                log.Note("host task 3 runs");
                Future<int> fromWorkers = OnWorkers(workers, 100);
                const int v = fromWorkers.Wait(); // a task: suspends, the host keeps pumping
                log.Note("host task 3 resolves");
                p.SetValue(v);
            },
            {.name = "host-task-3"})
        .Detach();
    const int v = log.Wait(f3);
    log.Note("level3 resumes");
    done.SetValue(v + 1);
}

// Level 2: a host task started inside the level-1 wait.
Detached Level2(TC::Scheduler& host, TC::Scheduler& workers, HostLog& log, Promise<int> done)
{
    co_await host.Schedule();
    log.Note("level2 runs");
    auto [f2, p2] = MakeFuture<int>();
    host.Start(
            [&host, &workers, &log, p = std::move(p2)]() mutable
            {
                log.Note("host task 2 runs");
                Future<int> fromWorkers = OnWorkers(workers, 1);
                const int v = fromWorkers.Wait();
                log.Note("host task 2 queues level3");
                Level3(host, workers, log, std::move(p));
                (void)v;
            },
            {.name = "host-task-2"})
        .Detach();
    const int v = log.Wait(f2);
    log.Note("level2 resumes");
    done.SetValue(v + 1);
}

// Any depth: each level queues the next on the host and waits for it on the host's stack.
Detached Nest(TC::Scheduler& host, int level, HostLog& log, Promise<int> out)
{
    co_await host.Schedule();
    if (level == 0)
    {
        host.Start([p = std::move(out)]() mutable { p.SetValue(0); }).Detach();
        co_return;
    }
    auto [future, promise] = MakeFuture<int>();
    Nest(host, level - 1, log, std::move(promise));
    const int v = log.Wait(future);
    out.SetValue(v + 1);
}
} // namespace

TEST_CASE("nested host waits three deep with host-pinned work at each level", "[host][nested]")
{
    TC::Scheduler host; // no workers: this thread pumps it
    TC::Scheduler workers(2);
    HostLog log;
    CHECK(host.RunPending().ran == 0); // the first pump makes this thread the host

    auto [f1, p1] = MakeFuture<int>();
    Level2(host, workers, log, std::move(p1)); // queued: runs inside the wait below
    log.Note("host waits");
    const int v = log.Wait(f1);
    log.Note("host resumes");

    CHECK(v == 102);
    CHECK(log.deepest == 3);
    CHECK_FALSE(log.offHost);
    const std::vector<std::string> expected{
        "host waits@0",           "level2 runs@1",
        "host task 2 runs@2",     "host task 2 queues level3@2",
        "level3 runs@2",          "host task 3 runs@3",
        "host task 3 resolves@3", "level3 resumes@2",
        "level2 resumes@1",       "host resumes@0",
    };
    CHECK(log.events == expected);
    CHECK(host.LiveTasks() == 0);
}

TEST_CASE("nested host waits to any depth", "[host][nested]")
{
    const int depth = GENERATE(1, 3, 16);
    TC::Scheduler host;
    HostLog log;
    host.RunPending();
    auto [future, promise] = MakeFuture<int>();
    Nest(host, depth, log, std::move(promise));
    CHECK(log.Wait(future) == depth);
    CHECK(log.deepest == depth + 1);
}

TEST_CASE("the host thread joins a host task that waits on host-pinned work", "[host][nested]")
{
    TC::Scheduler host;
    host.RunPending();
    auto [future, promise] = MakeFuture<std::string>();
    auto waiter = host.Start(
        [f = std::move(future)]() mutable
        {
            CHECK(f.Wait() == "pinned"); // a task: suspends
        });
    auto resolver = host.Start([p = std::move(promise)]() mutable { p.SetValue("pinned"); });
    waiter.Join(); // a converted-thread wait on the host: pumps both tasks
    resolver.Join();
    CHECK(host.LiveTasks() == 0);
}

TEST_CASE("a coroutine on the host co_awaits a Future resolved by a host task", "[host][nested]")
{
    TC::Scheduler host;
    host.RunPending();
    auto [future, promise] = MakeFuture<int>();
    auto [done, donePromise] = MakeFuture<int>();
    [](TC::Scheduler& h, Future<int> f, Promise<int> out) -> Detached
    {
        co_await h.Schedule();
        const int v = co_await f;
        out.SetValue(TC::Scheduler::Current() == &h ? v : -1);
    }(host, std::move(future), std::move(donePromise));
    host.Start([p = std::move(promise)]() mutable { p.SetValue(5); }).Detach();
    CHECK(done.Wait() == 5);
}
