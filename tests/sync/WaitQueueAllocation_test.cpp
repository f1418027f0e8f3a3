// WaitQueue waits allocate nothing: global operator new is replaced in this binary and counted
// while a task, a converted thread and a coroutine wait on a WaitQueue (untimed, timed, with a
// stop token) and are resumed or handed a value, after a warm-up round.

#include "SyncTestSupport.h"

#include <TC/Synchronization/AutoResetEvent_s.h>
#include <TC/Synchronization/WaitQueue.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <stop_token>
#include <thread>

#include "support/CountingNews.h"

using TestSupport::allocations;
using TestSupport::counting;

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
constexpr int kWarmUp = 50;
constexpr int kRounds = 300;

// The waiter (started by `start`) waits kWarmUp + kRounds times on `queue`, acknowledging each
// pass on `ack`; this thread resumes it (alternately ResumeOne and a HandOff) once it is queued.
// Counts the allocations of the last kRounds rounds, both sides.
template <class Start>
long CountSteadyState(WaitQueue& queue, Start start)
{
    AutoResetEvent_s ack;
    std::atomic<bool> done{false};
    start(ack, done, kWarmUp + kRounds);
    auto round = [&](int i)
    {
        while (!(i % 2 ? queue.ResumeOne() : queue.HandOff([](void*) noexcept {})))
            std::this_thread::yield();
        ack.Wait();
    };
    for (int i = 0; i < kWarmUp; ++i)
        round(i);
    allocations = 0;
    counting = true;
    for (int i = 0; i < kRounds; ++i)
        round(i);
    counting = false;
    Eventually([&] { return done.load(); });
    return allocations.load();
}

constexpr auto kAlways = []() noexcept { return true; };

Fire CoroutineLoop(TC::Scheduler& scheduler, WaitQueue& queue, TC::Duration timeout,
                   std::stop_token stop, AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
{
    co_await scheduler.Schedule();
    for (int i = 0; i < n; ++i)
    {
        (void)co_await queue.WaitAsync(kAlways, timeout, stop);
        ack.Set();
    }
    done = true;
}
} // namespace

TEST_CASE("WaitQueue: waiting and resuming allocate nothing in steady state", "[allocation]")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(1u);
    std::stop_source source; // never stopped: the waits register and drop its callback
    for (TC::Duration timeout : {TC::Duration::Infinite(), TC::Duration(std::chrono::seconds(10))})
    {
        INFO("timed: " << !timeout.IsInfinite());
        WaitQueue queue;
        auto loop = [&](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
        {
            for (int i = 0; i < n; ++i)
            {
                (void)queue.Wait(kAlways, timeout, source.get_token());
                ack.Set();
            }
            done = true;
        };
        CHECK(CountSteadyState(queue, [&](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
                               { scheduler.Start([&, n] { loop(ack, done, n); }).Detach(); }) == 0);
        std::thread thread;
        CHECK(CountSteadyState(queue, [&](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
                               { thread = std::thread([&, n] { loop(ack, done, n); }); }) == 0);
        thread.join();
        CHECK(CountSteadyState(queue, [&](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
                               { CoroutineLoop(scheduler, queue, timeout, source.get_token(), ack,
                                               done, n); }) == 0);
    }
}
