// guide-testing: the "Testing a primitive" section of the "Custom primitives" guide. The guide's
// Mailbox is driven by the test kit <TC/Testing.h> from tasks, threads and coroutines over 100
// seeded runs and passes every one; the same Mailbox without its re-check is caught. Prints the
// kit's summaries and exits non-zero if a verdict is not the expected one.

#include <TC/Core.h>
#include <TC/Testing.h>

#include <atomic>
#include <cstdio>

namespace
{
// The guide's Mailbox (see guide-custom-primitives.cpp), plus TakeAsync for coroutines and a
// switch that removes the re-check from OnSuspended -- the bug the kit has to catch.
template <bool ReCheck>
class Mailbox : public TC::ISuspendCallback
{
public:
    virtual ~Mailbox() = default;

    void Put(int value) noexcept
    {
        value_.store(value);
        if (auto waiter = waiter_.exchange(nullptr))
            TC::ResumeTask(waiter);
    }

    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0)) == 0)
            TC::SuspendTask(this);
        return value;
    }

    TC::Strands::Task<int> TakeAsync()
    {
        int value;
        while ((value = value_.exchange(0)) == 0)
            co_await TC::SuspendTaskAsync(this);
        co_return value;
    }

private:
    // [guide:broken]
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task);
        TC::Testing::RaceWindow(); // a window of our own: the kit may delay or interleave here
        if constexpr (ReCheck)     // without the re-check a Put in that window is lost
            if (value_.load() != 0)
                if (auto waiter = waiter_.exchange(nullptr))
                    TC::ResumeTask(waiter);
    }
    // [/guide:broken]

    std::atomic<int> value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// [guide:scenario]
// One run: a service and a client, each as a task, a thread or a coroutine as the seed decides.
template <class Box>
void RequestReply(TC::Testing::Context& ctx)
{
    auto& requests = ctx.Make<Box>(); // owned by the run, destroyed after it
    auto& replies = ctx.Make<Box>();
    ctx.Spawn(
        "service",
        [&]
        {
            for (int request; (request = requests.Take()) > 0;)
                replies.Put(request * 2);
        },
        [&]() -> TC::Strands::Task<void>
        {
            for (int request; (request = co_await requests.TakeAsync()) > 0;)
                replies.Put(request * 2);
        });
    ctx.Spawn(
        "client",
        [&]
        {
            for (int i = 1; i <= 10; ++i)
            {
                requests.Put(i);
                ctx.Check(replies.Take() == 2 * i, "the reply doubles the request");
            }
            requests.Put(-1);
        },
        [&]() -> TC::Strands::Task<void>
        {
            for (int i = 1; i <= 10; ++i)
            {
                requests.Put(i);
                ctx.Check(co_await replies.TakeAsync() == 2 * i, "the reply doubles the request");
            }
            requests.Put(-1);
        });
}
// [/guide:scenario]
} // namespace

int main()
{
    // [guide:stress]
    TC::Testing::StressOptions options; // seeds 1..100, Mode::Deterministic, every waiter kind
    const TC::Testing::Summary good = TC::Testing::Stress(options, RequestReply<Mailbox<true>>);
    std::printf("with the re-check:    %s", good.Describe().c_str());

    options.printFailures = false;
    const TC::Testing::Summary bad = TC::Testing::Stress(options, RequestReply<Mailbox<false>>);
    std::printf("without the re-check: %s", bad.Describe().c_str());
    // [/guide:stress]

    bool ok = good.Passed() && good.runs == 100;
    ok = ok && bad.lostWakeupRuns >= 99 && !bad.failingSeeds.empty();
    if (!bad.failingSeeds.empty())
    {
        // [guide:replay]
        // A failing seed replays the same interleaving, with a report naming the stuck waiter.
        const TC::Testing::Result replay =
            TC::Testing::RunScenario(bad.failingSeeds.front(), RequestReply<Mailbox<false>>);
        std::printf("%s", replay.Describe().c_str());
        // [/guide:replay]
        ok = ok && replay.lostWakeups > 0;
    }
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
