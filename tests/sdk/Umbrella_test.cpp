// <TC/TC.h> alone is enough to start a scheduler, wait on a primitive from a task and from a
// coroutine, and join.

#include <catch2/catch.hpp>

#include <TC/TC.h>

#include <atomic>

namespace
{
TC::Strands::Task<int> Doubled(TC::Synchronization::ManualResetEvent& ready, const int& value)
{
    co_await ready;
    co_return value * 2;
}

TC::Strands::DetachedTask Run(TC::Scheduler& scheduler, TC::Synchronization::ManualResetEvent& ready,
                     const int& value, std::atomic<int>& out,
                     TC::Synchronization::ManualResetEvent& done)
{
    co_await scheduler.Schedule();
    out = co_await Doubled(ready, value);
    done.Set();
}
} // namespace

TEST_CASE("The umbrella header gives the kernel, the primitives and coroutines")
{
    TC::Scheduler scheduler(1);
    TC::Synchronization::ManualResetEvent ready;
    TC::Synchronization::ManualResetEvent done;
    int value = 0;
    int fromTask = 0;
    std::atomic<int> fromCoroutine{0};
    auto task = scheduler.Start(
        [&]
        {
            ready.Wait();
            fromTask = value + 1;
        });
    Run(scheduler, ready, value, fromCoroutine, done);
    value = 21;
    ready.Set();
    task.Join();
    done.Wait(); // a converted thread waits on the same kind of primitive
    REQUIRE(fromTask == 22);
    REQUIRE(fromCoroutine == 42);
}
