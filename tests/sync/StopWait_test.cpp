// Stop requests ending stackful tasks' and converted threads' waits (TC/TaskStop.h): a stop-aware
// wait (a timed wait of a waiter with a stop token) returns false once the stop is requested;
// exactly one of resume, deadline and stop ends it; a stopped wait takes nothing; the waiter may
// delete the primitive the moment its wait returns (ASan sees any later access).

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>
#include <TC/TaskStop.h>
#include <TC/detail/SpinLock.h> // CpuRelax

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <stop_token>
#include <thread>
#include <vector>

#ifndef TC_STOP_RACE_ROUNDS
#define TC_STOP_RACE_ROUNDS 1000000
#endif

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
// Until `done()`, spinning, then yielding (the other side may share the core).
template <class Done>
void SpinUntil(Done done)
{
    for (unsigned spins = 0; !done(); ++spins)
    {
        if (spins < 200)
            TC::detail::CpuRelax();
        else
            std::this_thread::yield();
    }
}

TC::TaskOptions WithToken(std::stop_token token)
{
    TC::TaskOptions options;
    options.stopToken = std::move(token);
    return options;
}

// The outcome of one wait, as seen by the waiter.
struct Outcome
{
    bool returned = false;
    bool resumed = false;
    bool stopRequested = false;
};

// A task parked on `event` with UntilStopped: returns false once its stop is requested.
void ParkedTaskReturnsOnStop()
{
    ManualResetEvent event;
    std::stop_source source;
    Outcome outcome;
    {
        TC::Scheduler scheduler(1u);
        scheduler
            .Start(
                [&]
                {
                    outcome.resumed = event.Wait(TC::Duration::UntilStopped());
                    outcome.stopRequested = TC::StopRequested();
                    outcome.returned = true;
                },
                WithToken(source.get_token()))
            .Detach();
        SpinUntil([&] { return event.IsSuspended(); });
        source.request_stop();
    } // the Scheduler's shutdown waits for the task: it completes only if the wait returned
    CHECK(outcome.returned);
    CHECK_FALSE(outcome.resumed);
    CHECK(outcome.stopRequested);
    CHECK_FALSE(event.IsSuspended());
}
} // namespace

// Its own process (ctest sync.stop.notimers): timers are process-wide, and this runs before any
// test could start them.
TEST_CASE("Stop: without timers, a parked task's UntilStopped wait returns on stop",
          "[stop-notimers]")
{
    REQUIRE_FALSE(TC::TimersEnabled());
    ParkedTaskReturnsOnStop();
    // A finite timeout still has no limit without timers, but stops.
    ManualResetEvent event;
    std::stop_source source;
    std::atomic<bool> done{false};
    bool resumed = true;
    std::thread waiter(
        [&]
        {
            TC::StopScope scope(source.get_token());
            resumed = event.Wait(std::chrono::milliseconds(1));
            done.store(true);
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(done.load()); // no limit without timers
    source.request_stop();
    waiter.join();
    CHECK_FALSE(resumed);
    REQUIRE_FALSE(TC::TimersEnabled());
}

TEST_CASE("Stop: a task parked forever on an event returns when stopped; shutdown completes",
          "[stop]")
{
    TC::EnableTimers();
    ParkedTaskReturnsOnStop();
}

TEST_CASE("Stop: a converted thread's wait under a StopScope returns when stopped", "[stop]")
{
    TC::EnableTimers();
    ManualResetEvent event;
    std::stop_source source;
    Outcome outcome;
    std::thread waiter(
        [&]
        {
            CHECK_FALSE(TC::GetStopToken().stop_possible());
            {
                TC::StopScope scope(source.get_token());
                CHECK(TC::GetStopToken().stop_possible());
                outcome.resumed = event.Wait(TC::Duration::UntilStopped());
                outcome.stopRequested = TC::StopRequested();
            }
            CHECK_FALSE(TC::GetStopToken().stop_possible()); // the scope gave back the old one
            outcome.returned = true;
        });
    SpinUntil([&] { return event.IsSuspended(); });
    source.request_stop();
    waiter.join();
    CHECK(outcome.returned);
    CHECK_FALSE(outcome.resumed);
    CHECK(outcome.stopRequested);
}

TEST_CASE("Stop: requested before the wait, it returns at once; a set event still passes",
          "[stop]")
{
    TC::EnableTimers();
    std::stop_source source;
    source.request_stop();
    TC::Scheduler scheduler(1u);
    ManualResetEvent unset;
    ManualResetEvent set;
    set.Set();
    bool unsetResult = true;
    bool setResult = false;
    bool untimed = false;
    scheduler
        .Start(
            [&]
            {
                unsetResult = unset.Wait(TC::Duration::UntilStopped());
                // Infinite() is the untimed form's spelling: not stop-aware.
                setResult = set.Wait(TC::Duration::Infinite());
                unset.Set();
                untimed = unset.Wait(TC::Duration::Infinite());
            },
            WithToken(source.get_token()))
        .Join();
    CHECK_FALSE(unsetResult);
    CHECK(setResult);
    CHECK(untimed);
}

TEST_CASE("Stop: a stopped Semaphore wait takes no permit; a stopped TryLockFor does not lock",
          "[stop]")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(1u);
    Semaphore semaphore(0);
    Mutex mutex;
    mutex.lock(); // held by this thread throughout the waits
    std::stop_source semaphoreStop;
    std::stop_source mutexStop;
    bool acquired = true;
    bool locked = true;
    auto semaphoreWaiter = scheduler.Start(
        [&] { acquired = semaphore.Acquire(TC::Duration::UntilStopped()); },
        WithToken(semaphoreStop.get_token()));
    std::thread mutexWaiter(
        [&]
        {
            TC::StopScope scope(mutexStop.get_token());
            locked = mutex.TryLockFor(TC::Duration::UntilStopped());
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    semaphoreStop.request_stop();
    mutexStop.request_stop();
    semaphoreWaiter.Join();
    mutexWaiter.join();
    CHECK_FALSE(acquired);
    CHECK_FALSE(locked);
    semaphore.Release(1);
    CHECK(semaphore.Available() == 1); // the stopped waiter left no claim on it
    mutex.unlock();
    CHECK(mutex.try_lock()); // nobody was handed the mutex
    mutex.unlock();
}

TEST_CASE("Stop: a task without a token waits as before", "[stop]")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(1u);
    ManualResetEvent event;
    std::stop_source other;
    bool timedOut = false;
    bool possible = true;
    bool requested = true;
    bool resumed = false;
    auto task = scheduler.Start(
        [&]
        {
            possible = TC::GetStopToken().stop_possible();
            timedOut = !event.Wait(std::chrono::milliseconds(2));
            requested = TC::StopRequested();
            resumed = event.Wait(TC::Duration::UntilStopped());
        });
    // Another waiter's stop does not reach it.
    auto stopped = scheduler.Start([] { (void)TC::StopRequested(); }, WithToken(other.get_token()));
    other.request_stop();
    stopped.Join();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    event.Set();
    task.Join();
    CHECK_FALSE(possible);
    CHECK(timedOut);
    CHECK_FALSE(requested);
    CHECK(resumed);
}

namespace
{
// One round of the race: the waiter publishes it, a setter thread Sets the event and a stopper
// thread requests the stop, each as soon as it sees the round.
struct Round
{
    ManualResetEvent* event = new ManualResetEvent;
    std::stop_source source;
    std::atomic<int> racersDone{0};
};

// Counted on the waiter's side: Catch2 asserts on the test's thread only.
struct RaceCounts
{
    std::int64_t resumed = 0;
    std::int64_t stopped = 0;
    std::int64_t wrong = 0; // false without a stop requested, or a set event left unseen
};

class SetStopRace
{
public:
    SetStopRace()
        : setter_([this] { Race([](Round& round) { round.event->Set(); }); }),
          stopper_([this] { Race([](Round& round) { round.source.request_stop(); }); })
    {
    }
    SetStopRace(const SetStopRace&) = delete;
    SetStopRace& operator=(const SetStopRace&) = delete;
    ~SetStopRace()
    {
        quit_.store(true, std::memory_order_release);
        setter_.join();
        stopper_.join();
    }

    // One round from the calling waiter (a task or a converted thread).
    void RunRound(RaceCounts& counts)
    {
        auto* round = new Round;
        {
            TC::StopScope scope(round->source.get_token());
            slot_.store(round, std::memory_order_relaxed);
            sequence_.fetch_add(1, std::memory_order_release);
            const bool resumed = round->event->Wait(TC::Duration::UntilStopped());
            if (resumed)
            {
                // The setter's claim ended it: the stopper's may be running, but must let go of
                // the event before the wait returns. Deleted at once: ASan sees any later access.
                delete round->event;
                round->event = nullptr;
                ++counts.resumed;
            }
            else
            {
                ++counts.stopped;
                if (!TC::StopRequested())
                    ++counts.wrong;
            }
        }
        // The racers have made their calls before the round goes (the setter's Set may come
        // after a stop ended the wait, and needs the event).
        SpinUntil([&] { return round->racersDone.load(std::memory_order_acquire) == 2; });
        if (round->event)
        {
            if (!round->event->IsSet() || round->event->IsSuspended())
                ++counts.wrong;
            delete round->event;
        }
        delete round;
    }

private:
    template <class Act>
    void Race(Act act)
    {
        std::uint64_t seen = 0;
        for (;;)
        {
            std::uint64_t now = 0;
            for (unsigned spins = 0;
                 (now = sequence_.load(std::memory_order_acquire)) == seen; ++spins)
            {
                if (quit_.load(std::memory_order_acquire))
                    return;
                if (spins < 200)
                    TC::detail::CpuRelax();
                else
                    std::this_thread::yield();
            }
            seen = now;
            Round& round = *slot_.load(std::memory_order_relaxed);
            act(round);
            round.racersDone.fetch_add(1, std::memory_order_release);
        }
    }

    std::atomic<Round*> slot_{nullptr};
    std::atomic<std::uint64_t> sequence_{0};
    std::atomic<bool> quit_{false};
    std::thread setter_;
    std::thread stopper_;
};
} // namespace

// A million waits in Release (with the Set, the stop and the delete of each: four million
// operations), a tenth in Debug, 4000 under a sanitizer (TC_STOP_RACE_ROUNDS, times
// TC_STRESS_SCALE); half from a task, half from a converted thread.
TEST_CASE("Stress: a stop racing a Set ends each wait exactly once, and the waiter deletes the "
          "event at once",
          "[stop][stress]")
{
    TC::EnableTimers();
    const std::int64_t rounds =
        TCStress::Scale<std::int64_t>(TC_STOP_RACE_ROUNDS, 1.0, 2, std::int64_t{1} << 40);
    SetStopRace race;
    RaceCounts taskCounts;
    RaceCounts threadCounts;
    {
        TC::Scheduler scheduler(1u);
        scheduler
            .Start(
                [&]
                {
                    for (std::int64_t i = 0; i < rounds / 2; ++i)
                        race.RunRound(taskCounts);
                })
            .Join();
    }
    for (std::int64_t i = 0; i < rounds / 2; ++i)
        race.RunRound(threadCounts);
    INFO("task: " << taskCounts.resumed << " resumed, " << taskCounts.stopped << " stopped");
    INFO("thread: " << threadCounts.resumed << " resumed, " << threadCounts.stopped << " stopped");
    CHECK(taskCounts.wrong == 0);
    CHECK(threadCounts.wrong == 0);
    CHECK(taskCounts.resumed + taskCounts.stopped == rounds / 2);
    CHECK(threadCounts.resumed + threadCounts.stopped == rounds / 2);
}

// Permits released and stops requested by another thread while short deadlines end waits: every
// permit is taken by a wait that returned true or is still there; each wait returns once.
TEST_CASE("Stress: stops and deadlines racing Semaphore releases lose no permit",
          "[stop][stress]")
{
    TC::EnableTimers();
    const std::int64_t rounds = Scaled(100000);
    Semaphore semaphore(0);
    std::vector<std::stop_source> sources(static_cast<std::size_t>(rounds)); // outlive the racer
    std::atomic<std::int64_t> released{0};
    std::atomic<std::int64_t> round{0};
    std::atomic<bool> quit{false};
    std::thread racer(
        [&]
        {
            std::minstd_rand random(7);
            while (!quit.load(std::memory_order_acquire))
            {
                // A permit only when none is there, so that most acquires wait.
                if (random() % 2 && semaphore.Available() <= 0)
                {
                    semaphore.Release(1);
                    released.fetch_add(1, std::memory_order_relaxed);
                }
                else
                    sources[static_cast<std::size_t>(round.load(std::memory_order_acquire))]
                        .request_stop();
                for (unsigned i = random() % 256; i > 0; --i)
                    TC::detail::CpuRelax();
            }
        });
    std::int64_t acquired = 0;
    std::int64_t stopped = 0;
    TC::Scheduler scheduler(1u);
    scheduler
        .Start(
            [&]
            {
                std::minstd_rand random(11);
                for (std::int64_t i = 0; i < rounds; ++i)
                {
                    round.store(i, std::memory_order_release);
                    TC::StopScope scope(sources[static_cast<std::size_t>(i)].get_token());
                    // Deadlines of 0 to 100 us race the stop and the releases.
                    const auto timeout = std::chrono::nanoseconds(random() % 100000);
                    if (semaphore.Acquire(timeout))
                        ++acquired;
                    else if (TC::StopRequested())
                        ++stopped;
                }
            })
        .Join();
    quit.store(true, std::memory_order_release);
    racer.join();
    INFO(acquired << " acquired, " << stopped << " stopped");
    CHECK(stopped > 0);
    CHECK(acquired + semaphore.Available() == released.load());
}
