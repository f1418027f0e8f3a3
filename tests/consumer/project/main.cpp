// The consumer: a scheduler with two workers, tasks that send over a channel and signal events,
// a coroutine, a primitive of its own built on Waitable, and one seeded kit scenario; every
// result is checked. `consumer --misuse` breaks a rule on purpose: a checked build must abort
// with the checked-mode message (the test runs it and reads stderr).

#include <TC/TC.h>
#include <TC/Testing.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace
{
// A user primitive: opens once `count` arrivals were counted. Waitable supplies Wait and
// co_await from TryWait and Resume.
class Countdown
    : public TC::Synchronization::Waitable<TC::Synchronization::SuspensionKind::Multiple, Countdown>
{
public:
    explicit Countdown(int count) noexcept : count_(count) {}

    void Arrive() noexcept
    {
        if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            Resume();
    }

    bool TryWait() noexcept { return count_.load(std::memory_order_acquire) <= 0; }

    void Resume() noexcept
    {
        TC::Synchronization::SuspendableBase<
            TC::Synchronization::SuspensionKind::Multiple>::Resume();
    }

private:
    std::atomic<int> count_;
};

TC::Strands::Task<int> Answer(Countdown& sent)
{
    co_await sent;
    co_return 42;
}

TC::Strands::DetachedTask AskOn(TC::Scheduler& scheduler, Countdown& sent, std::atomic<int>& answer,
                       TC::Synchronization::ManualResetEvent& answered)
{
    co_await scheduler.Schedule();
    answer = co_await Answer(sent);
    answered.Set();
}

int RunProgram()
{
    int failures = 0;
    // The headers and the linked library agree on checked mode.
    failures += TC::IsCheckedBuild() != (TC_CHECKED != 0);
    {
        constexpr int kSenders = 4;
        constexpr int kValues = 100;
        TC::Synchronization::Channel<int> channel(8); // bounded: senders wait for room
        TC::Synchronization::ManualResetEvent go;
        TC::Synchronization::AutoResetEvent received;
        TC::Synchronization::ManualResetEvent answered;
        Countdown sent(kSenders);
        std::atomic<int> sum{0};
        std::atomic<int> answer{0};

        TC::Scheduler scheduler(2);
        AskOn(scheduler, sent, answer, answered);
        for (int s = 0; s < kSenders; ++s)
            scheduler
                .Start(
                    [&]
                    {
                        go.Wait();
                        for (int v = 1; v <= kValues; ++v)
                            channel.Send(v);
                        sent.Arrive();
                    })
                .Detach();
        TC::JoinHandle receiver = scheduler.Start(
            [&]
            {
                for (int n = 0; n < kSenders * kValues; ++n)
                    sum += *channel.Receive();
                received.Set();
            });
        go.Set();
        sent.Wait(); // the main thread waits as a converted thread
        received.Wait();
        receiver.Join();
        answered.Wait();
        failures += sum != kSenders * kValues * (kValues + 1) / 2;
        failures += answer != 42;
    }
    const TC::Testing::Result result =
        TC::Testing::RunScenario(1,
                                 [](TC::Testing::Context& ctx)
                                 {
                                     auto& done = ctx.Make<Countdown>(2);
                                     ctx.Spawn("a", [&done] { done.Arrive(); });
                                     ctx.Spawn("b", [&done] { done.Arrive(); });
                                     ctx.Spawn("waiter", [&done] { done.Wait(); });
                                 });
    failures += !result.Passed();
    std::printf("consumer (%s): %s\n", TC::IsCheckedBuild() ? "checked" : "unchecked",
                failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
} // namespace

int main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "--misuse") == 0)
    {
        TC::ResumeTask(TC::SuspendedTask(nullptr)); // checked mode: "ResumeTask on a null handle"
        std::printf("consumer: the misuse went unnoticed\n");
        return 0;
    }
    return RunProgram();
}
