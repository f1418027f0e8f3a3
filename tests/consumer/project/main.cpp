// The consumer: starts a scheduler, waits on a latch from the main thread (a converted thread)
// and on a coroutine, runs one seeded kit scenario, and checks every result.

#include <TC/TC.h>
#include <TC/Testing.h>

#include <atomic>
#include <cstdio>

namespace
{
TC::Task<int> Answer(TC::Synchronization::Latch& started)
{
    co_await started;
    co_return 42;
}

TC::DetachedTask AskOn(TC::Scheduler& scheduler, TC::Synchronization::Latch& started,
                       std::atomic<int>& answer, TC::Synchronization::Latch& answered)
{
    co_await scheduler.Schedule();
    answer = co_await Answer(started);
    answered.CountDown();
}
} // namespace

int main()
{
    int failures = 0;
    {
        TC::Scheduler scheduler(2);
        TC::Synchronization::Latch started(4);
        TC::Synchronization::Latch answered(1);
        std::atomic<int> sum{0};
        std::atomic<int> answer{0};
        AskOn(scheduler, started, answer, answered);
        for (int i = 1; i <= 4; ++i)
            scheduler
                .Start(
                    [&, i]
                    {
                        sum += i;
                        started.CountDown();
                    })
                .Detach();
        started.Wait();
        answered.Wait();
        failures += sum != 10;
        failures += answer != 42;
    }
    const TC::Testing::Result result =
        TC::Testing::RunScenario(1,
                                 [](TC::Testing::Context& ctx)
                                 {
                                     auto& done = ctx.Make<TC::Synchronization::Latch>(2);
                                     ctx.Spawn("a", [&done] { done.CountDown(); });
                                     ctx.Spawn("b", [&done] { done.CountDown(); });
                                     ctx.Spawn("waiter", [&done] { done.Wait(); });
                                 });
    failures += !result.Passed();
    std::printf("consumer: %s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
