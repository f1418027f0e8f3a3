// Shutdown in every order, in the game loop's shape, mid-frame: a host scheduler pumped by this
// thread and a worker scheduler, each with tasks that wait on the other's work. Whatever is
// destroyed or stopped first, and from whichever thread, it finishes, and returns within 1 s of
// its last work finishing: "Destruction and Stop keep pumping the schedulers the calling thread
// hosts, so any order of shutdown finishes" (Scheduler.h's class comment, DESIGN.md).

#include "support/Detached.h"
#include "support/StressScale.h"

#include <TC/Core.h>
#include <TC/Synchronization/AutoResetEvent_s.h>
#include <TC/Synchronization/Future.h>
#include <TC/Synchronization/ManualResetEvent.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using TC::Synchronization::AutoResetEvent_s;
using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::ManualResetEvent;
using TC::Synchronization::Promise;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace
{
#if defined(__SANITIZE_THREAD__)
constexpr double kBuildFactor = 0.2; // a switch between ThreadSanitizer's fibers is slow
#else
constexpr double kBuildFactor = 1;
#endif
// Worker tasks in flight when the shutdown begins.
const int kJobs = TCStress::Scale(500, kBuildFactor, 20, 100000);
constexpr int kChain = 10;    // host tasks that wake one another before the jobs may finish
constexpr auto kBound = 1s;   // from the last work finishing to the shutdown call's return
constexpr auto kRescue = 60s; // a shutdown that stopped pumping the host is rescued after this

using TestSupport::Detached;

// The latest moment any work of the frame finished.
class LastWork
{
public:
    void Note() noexcept
    {
        const auto now = Clock::now().time_since_epoch().count();
        auto seen = at_.load();
        while (seen < now && !at_.compare_exchange_weak(seen, now))
        {
        }
    }
    Clock::time_point Get() const noexcept
    {
        return Clock::time_point(Clock::duration(at_.load()));
    }

private:
    std::atomic<Clock::rep> at_{0};
};

// One frame in samples/game-loop.cpp's shape, left half-way. A High frame task on the host fans
// kJobs jobs out to the workers and waits for them and for a streamed asset. Every job waits for
// `registered`, which only host work sets: a chain of kChain Normal host tasks, each woken by the
// one before. The asset is a coroutine: on the workers it waits (timed) for the chain too, then
// moves to the host and hands its result to the frame task.
struct Frame
{
    ManualResetEvent registered;
    AutoResetEvent_s streamGo;
    std::array<AutoResetEvent_s, kChain> chain;
    std::atomic<int> jobsDone{0};
    std::atomic<int> chainDone{0};
    std::atomic<bool> applied{false};
    std::atomic<bool> streamed{false};
    LastWork last;

    void Begin(TC::Scheduler& host, TC::Scheduler& workers)
    {
        host.Start([this, &workers] { RunFrame(workers); },
                   {.name = "frame", .priority = TC::Priority::High})
            .Detach();
        for (int i = 0; i < kChain; ++i)
            host.Start(
                    [this, i]
                    {
                        chain[i].Wait();
                        ++chainDone;
                        last.Note();
                        if (i + 1 < kChain)
                            chain[i + 1].Set();
                        else
                        {
                            registered.Set();
                            streamGo.Set();
                        }
                    },
                    {.name = "register"})
                .Detach();
        host.Start([this] { chain[0].Set(); }, {.name = "register-start"}).Detach();
    }

    void RunFrame(TC::Scheduler& workers)
    {
        TC::Scheduler& host = *TC::Scheduler::Current();
        std::vector<Future<int>> parts;
        for (int i = 0; i < kJobs; ++i)
        {
            auto [future, promise] = MakeFuture<int>();
            workers
                .Start(
                    [this, i, p = std::move(promise)]() mutable
                    {
                        registered.Wait(); // host work
                        ++jobsDone;
                        last.Note();
                        p.SetValue(i);
                    },
                    {.name = "job", .stackSize = TC::StackSize::Small})
                .Detach();
            parts.push_back(std::move(future));
        }
        auto [asset, assetPromise] = MakeFuture<bool>();
        Stream(workers, host, std::move(assetPromise));
        long sum = 0;
        for (Future<int>& part : parts)
            sum += part.Wait(); // a task waits: the host goes on pumping
        const bool streamedOk = asset.Wait();
        applied = sum == long{kJobs} * (kJobs - 1) / 2 && streamedOk;
        last.Note();
    }

    Detached Stream(TC::Scheduler& workers, TC::Scheduler& host, Promise<bool> done)
    {
        co_await workers.Schedule();
        const bool go = co_await streamGo.WaitAsync(TC::Duration(30s)); // parked on the workers
        last.Note();
        co_await host.Schedule();
        streamed = go;
        last.Note();
        done.SetValue(go);
    }

    // What a shutdown that stopped pumping the host leaves undone, done from another thread.
    void Rescue()
    {
        registered.Set();
        streamGo.Set();
    }

    void CheckDone() const
    {
        CHECK(jobsDone == kJobs);
        CHECK(chainDone == kChain);
        CHECK(streamed);
        CHECK(applied);
    }
};

// Rescues the frame from its own thread if the shutdown under test has not let the host's work
// run within kRescue, so that such a shutdown fails the test instead of hanging it.
class Watchdog
{
public:
    explicit Watchdog(Frame& frame)
        : thread_(
              [this, &frame]
              {
                  std::unique_lock lock(mutex_);
                  if (wake_.wait_for(lock, kRescue, [this] { return done_; }))
                      return;
                  fired = true;
                  lock.unlock();
                  frame.Rescue();
              })
    {
    }
    ~Watchdog()
    {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    std::atomic<bool> fired{false};

private:
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;
};

TC::SchedulerOptions HostOptions()
{
    TC::SchedulerOptions options;
    options.name = "main";
    options.workerCount = 0;
    return options;
}

TC::SchedulerOptions WorkerOptions()
{
    TC::SchedulerOptions options;
    options.name = "jobs";
    options.workerCount = 2;
    return options;
}

// Begins the frame and pumps its High work once: the frame task has fanned out and waits.
void LeaveMidFrame(Frame& frame, TC::Scheduler& host, TC::Scheduler& workers)
{
    frame.Begin(host, workers);
    host.RunPending(SIZE_MAX, TC::Priority::High);
    REQUIRE_FALSE(frame.applied);
}

double Milliseconds(Clock::duration span)
{
    return std::chrono::duration<double>(span).count() * 1000;
}

void CheckReturnedInTime(const Frame& frame, Clock::time_point returned)
{
    const auto after = returned - frame.last.Get();
    INFO("returned " << Milliseconds(after) << " ms after the last work finished");
    CHECK(after < kBound);
}

// Declared just before a scheduler, it checks, once that scheduler's destructor has returned,
// that it returned within kBound of the frame's last work finishing.
struct ReturnedInTime
{
    const Frame& frame;
    ~ReturnedInTime() { CheckReturnedInTime(frame, Clock::now()); }
};
} // namespace

TEST_CASE("Shutdown, worker scheduler first (declared after the host, as the game loop does), "
          "mid-frame: its destructor pumps the host work its tasks wait on")
{
    TC::EnableTimers();
    Frame frame;
    Watchdog watchdog(frame);
    {
        ReturnedInTime hostInTime{frame};
        TC::Scheduler host(HostOptions());
        ReturnedInTime workersInTime{frame};
        TC::Scheduler workers(WorkerOptions());
        LeaveMidFrame(frame, host, workers);
    } // ~workers (every job waits on the host chain), then ~host
    CHECK_FALSE(watchdog.fired);
    frame.CheckDone();
}

TEST_CASE("Shutdown, host scheduler first, mid-frame: its destructor pumps the host while the "
          "workers finish the jobs its frame task waits on")
{
    TC::EnableTimers();
    Frame frame;
    Watchdog watchdog(frame);
    {
        ReturnedInTime workersInTime{frame};
        TC::Scheduler workers(WorkerOptions());
        ReturnedInTime hostInTime{frame};
        TC::Scheduler host(HostOptions());
        LeaveMidFrame(frame, host, workers);
    } // ~host (its frame task waits on the jobs, the jobs on its chain), then ~workers
    CHECK_FALSE(watchdog.fired);
    frame.CheckDone();
}

TEST_CASE("Shutdown, the worker scheduler stopped from another thread while the host thread "
          "keeps running frames")
{
    TC::EnableTimers();
    Frame frame;
    Watchdog watchdog(frame);
    TC::Scheduler host(HostOptions());
    TC::Scheduler workers(WorkerOptions());
    LeaveMidFrame(frame, host, workers);
    std::atomic<bool> stopped{false};
    Clock::time_point stopReturned;
    std::thread stopper(
        [&]
        {
            workers.Stop();
            stopReturned = Clock::now();
            stopped = true;
        });
    // The game loop goes on: the host's frames and background work, until the workers stopped
    // and the frame was applied.
    const auto giveUp = Clock::now() + 2 * kRescue;
    while ((!stopped || !frame.applied) && Clock::now() < giveUp)
        if (host.RunFor(TC::Duration(500us)).ran == 0)
            host.WaitForWork(TC::Duration(1ms));
    stopper.join();
    CHECK_FALSE(watchdog.fired);
    CHECK(workers.Stopped());
    CHECK(frame.jobsDone == kJobs);
    CHECK(stopReturned - frame.last.Get() < kBound);
    frame.CheckDone();
}

TEST_CASE("Shutdown, the host scheduler stopped from another thread while the host thread waits: "
          "the wait and Stop take turns pumping it")
{
    TC::EnableTimers();
    Frame frame;
    Watchdog watchdog(frame);
    TC::Scheduler workers(WorkerOptions());
    TC::Scheduler host(HostOptions());
    LeaveMidFrame(frame, host, workers);
    ManualResetEvent hostStopped;
    Clock::time_point stopReturned;
    std::thread stopper(
        [&]
        {
            host.Stop();
            stopReturned = Clock::now();
            hostStopped.Set();
        });
    hostStopped.Wait(); // a wait on the host thread: pumps the host, in turns with Stop
    stopper.join();
    CHECK_FALSE(watchdog.fired);
    CHECK(host.Stopped());
    frame.CheckDone();
    CheckReturnedInTime(frame, stopReturned);
    const auto before = Clock::now();
    workers.Stop();
    CHECK(Clock::now() - before < kBound);
}

TEST_CASE("Destroying a host scheduler whose tasks wake one another costs no sleep per wake-up")
{
    // Each task of the chain is woken by the one before, on the host worker, while the
    // destructor pumps: the next round of the drain runs it at once.
    constexpr int kLinks = 20;
    std::array<AutoResetEvent_s, kLinks> links;
    std::atomic<int> ran{0};
    Clock::time_point start;
    {
        TC::Scheduler host(HostOptions());
        for (int i = 0; i < kLinks; ++i)
            host.Start(
                    [&, i]
                    {
                        links[i].Wait();
                        ++ran;
                        if (i + 1 < kLinks)
                            links[i + 1].Set();
                    })
                .Detach();
        host.RunUntilIdle(); // every task waits now
        host.Start([&] { links[0].Set(); }).Detach();
        start = Clock::now();
    }
    const auto took = Clock::now() - start;
    INFO("~Scheduler took " << Milliseconds(took) << " ms for " << kLinks << " wake-ups");
    CHECK(ran == kLinks);
    CHECK(took < 1s); // a sleep per wake-up would take 2 s
}
