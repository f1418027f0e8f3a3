// Waiting and waking allocate nothing: global operator new is replaced in this binary and
// counted while each primitive is waited on and woken, after a warm-up round (first use of a
// thread, a stack pool, a timer). A Channel allocates a block per 31 values until its pool of
// spare blocks holds what a steady flow needs (a bounded one fills the pool when constructed).

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "support/CountingNews.h"

using TestSupport::allocations;
using TestSupport::counting;

using namespace TC::Synchronization;
using namespace TC::SyncTests;

namespace
{
constexpr int kWarmUp = 50;
constexpr int kRounds = 300;

// One waiter loop (a task, or a coroutine, started by `start`) waits kWarmUp + kRounds times and
// acknowledges each pass on `ack`; the main thread (a converted thread) wakes it and waits for
// the acknowledgement. Allocations are counted over the last kRounds rounds: every suspension
// and resumption on both sides, the primitive's and the kernel's.
template <class Start, class Wake>
long CountSteadyState(Start start, Wake wake)
{
    AutoResetEvent_s ack;
    std::atomic<bool> done{false};
    start(ack, done, kWarmUp + kRounds);
    for (int i = 0; i < kWarmUp; ++i)
    {
        wake();
        ack.Wait();
    }
    allocations = 0;
    counting = true;
    for (int i = 0; i < kRounds; ++i)
    {
        wake();
        ack.Wait();
    }
    counting = false;
    Eventually([&] { return done.load(); });
    return allocations.load();
}

template <class Wait>
auto InTask(TC::Scheduler& scheduler, Wait wait)
{
    return [&scheduler, wait](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
    {
        scheduler
            .Start(
                [wait, &ack, &done, n]() mutable
                {
                    for (int i = 0; i < n; ++i)
                    {
                        wait();
                        ack.Set();
                    }
                    done = true;
                })
            .Detach();
    };
}

template <class MakeAwaitable>
Fire CoroutineLoop(TC::Scheduler& scheduler, MakeAwaitable awaitable, AutoResetEvent_s& ack,
                   std::atomic<bool>& done, int n)
{
    co_await scheduler.Schedule();
    for (int i = 0; i < n; ++i)
    {
        co_await awaitable();
        ack.Set();
    }
    done = true;
}

template <class MakeAwaitable>
auto InCoroutine(TC::Scheduler& scheduler, MakeAwaitable awaitable)
{
    return [&scheduler, awaitable](AutoResetEvent_s& ack, std::atomic<bool>& done, int n)
    { CoroutineLoop(scheduler, awaitable, ack, done, n); };
}
} // namespace

TEST_CASE("Waiting and waking allocate nothing in steady state", "[allocation]")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(1u);
    {
        // The kernel's per-worker run queue grows at a new high-water mark (a one-time growth,
        // not a wait's cost): wake 512 tasks at once from a task of the worker first.
        ManualResetEvent open;
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 512; ++i)
            tasks.push_back(scheduler.Start([&] { open.Wait(); }));
        Eventually([&] { return scheduler.LiveTasks() == 512 && open.IsSuspended(); });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        scheduler.Start([&] { open.Set(); }).Join();
        for (auto& task : tasks)
            task.Join();
    }

    AutoResetEvent_s autoS;
    CHECK(CountSteadyState(InTask(scheduler, [&] { autoS.Wait(); }), [&] { autoS.Set(); }) == 0);
    CHECK(CountSteadyState(InTask(scheduler, [&] { (void)autoS.Wait(std::chrono::seconds(10)); }),
                           [&] { autoS.Set(); }) == 0);
    CHECK(CountSteadyState(InCoroutine(scheduler, [&] { return autoS.WaitAsync(); }),
                           [&] { autoS.Set(); }) == 0);

    ManualResetEvent_s manualS;
    CHECK(CountSteadyState(InTask(scheduler,
                                  [&]
                                  {
                                      manualS.Wait();
                                      manualS.Reset();
                                  }),
                           [&] { manualS.Set(); }) == 0);

    AutoResetEvent autoM;
    CHECK(CountSteadyState(InTask(scheduler, [&] { autoM.Wait(); }), [&] { autoM.Set(); }) == 0);
    CHECK(CountSteadyState(InCoroutine(scheduler, [&] { return autoM.WaitAsync(); }),
                           [&] { autoM.Set(); }) == 0);

    ManualResetEvent manualM;
    CHECK(CountSteadyState(InTask(scheduler,
                                  [&]
                                  {
                                      manualM.Wait();
                                      manualM.Reset();
                                  }),
                           [&] { manualM.Set(); }) == 0);

    WaitGroup group(1);
    CHECK(CountSteadyState(InTask(scheduler,
                                  [&]
                                  {
                                      group.Wait();
                                      group.Add(1);
                                  }),
                           [&] { group.Done(); }) == 0);

    static std::optional<Latch> latches[kWarmUp + kRounds];
    for (auto& latch : latches)
        latch.emplace(1);
    int waitIndex = 0;
    int wakeIndex = 0;
    CHECK(CountSteadyState(InTask(scheduler, [&] { latches[waitIndex++]->Wait(); }),
                           [&] { latches[wakeIndex++]->CountDown(); }) == 0);

    Semaphore sem;
    CHECK(CountSteadyState(InTask(scheduler, [&] { sem.Acquire(); }), [&] { sem.Release(); }) == 0);
    CHECK(CountSteadyState(InTask(scheduler, [&] { (void)sem.Acquire(std::chrono::seconds(10)); }),
                           [&] { sem.Release(); }) == 0);
    CHECK(CountSteadyState(InCoroutine(scheduler, [&] { return sem.AcquireAsync(); }),
                           [&] { sem.Release(); }) == 0);

    // The main thread holds the mutex while the task tries it, so the task queues and is handed
    // the mutex by the unlock.
    Mutex mutex;
    AutoResetEvent_s go;
    CHECK(CountSteadyState(InTask(scheduler,
                                  [&]
                                  {
                                      go.Wait();
                                      mutex.lock();
                                      mutex.unlock();
                                  }),
                           [&]
                           {
                               mutex.lock();
                               go.Set();
                               for (int i = 0; i < 50; ++i)
                                   std::this_thread::yield();
                               mutex.unlock();
                           }) == 0);

    ConditionVariable cv;
    bool flag = false;
    CHECK(CountSteadyState(InTask(scheduler,
                                  [&]
                                  {
                                      std::unique_lock lock(mutex);
                                      cv.Wait(lock, [&] { return flag; });
                                      flag = false;
                                  }),
                           [&]
                           {
                               std::lock_guard guard(mutex);
                               flag = true;
                               cv.NotifyOne();
                           }) == 0);

    Barrier barrier(2);
    CHECK(CountSteadyState(InTask(scheduler, [&] { barrier.ArriveAndWait(); }),
                           [&] { barrier.ArriveAndWait(); }) == 0);

    Mailbox<int> box;
    CHECK(CountSteadyState(InTask(scheduler, [&] { (void)box.Take(); }), [&] { box.Put(1); }) == 0);

    Channel<int> channel(4); // bounded: every block it can span is allocated up front
    CHECK(CountSteadyState(InTask(scheduler, [&] { (void)channel.Receive(); }),
                           [&] { channel.Send(1); }) == 0);

    Channel<int> unbounded; // the warm-up's blocks come back to its pool and are reused
    CHECK(CountSteadyState(InTask(scheduler, [&] { (void)unbounded.Receive(); }),
                           [&] { unbounded.Send(1); }) == 0);
}

TEST_CASE("The allocation counter sees allocations", "[allocation]")
{
    allocations = 0;
    counting = true;
    auto* p = new int(1);
    counting = false;
    delete p;
    CHECK(allocations == 1);
}
