// guide-strands: the code of the "Strands" guide -- a Strand serialising work from four threads
// without a lock, KeyedStrands with an around-task hook, the Seal/drain/Close teardown, and an
// awaitable that comes back through a ResumeTarget. Prints one line per case and exits non-zero
// if a check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization/Latch.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-62s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

// [guide:on-thread]
// Adapts a callback API: runs `work` on a thread of its own and continues the awaiting coroutine
// where it was -- the ResumeTarget current at the suspension (holding a strand's state alive),
// or `fallback` outside every executor. Awaitables built on SuspendTaskAsync get this for free;
// one that hands its coroutine to an executor itself takes a ResumeTarget.
struct OnThread
{
    void (*work)();
    TC::IExecutor& fallback;
    std::thread thread{};

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> awaiting)
    {
        TC::Strands::ResumeTarget target = TC::Strands::ResumeTarget::CurrentOr(fallback);
        thread = std::thread(
            [fn = work, target, awaiting]
            {
                fn();
                target.Submit(TC::ParkedWork{awaiting, {}}); // never resumed inline on this thread
            });
    }
    void await_resume() { thread.join(); } // the thread's last step was the Submit
};

TC::Strands::DetachedTask Handler(TC::Strands::Strand* strand, bool* backHere, TC::Synchronization::Latch* done)
{
    co_await TC::Strands::ResumeOn{*strand};
    co_await OnThread{[] { /* a blocking call */ }, *strand};
    *backHere = strand->RunningHere();
    done->CountDown();
}
// [/guide:on-thread]
} // namespace

int main()
{
    TC::Scheduler scheduler(2u);

    {
        // [guide:strand]
        // Four threads post 10 000 increments each to one strand over a two-worker scheduler:
        // the counter needs no lock, because the strand runs one task at a time.
        TC::Strands::Strand strand(scheduler);
        long counter = 0; // touched only from the strand
        std::vector<std::thread> posters;
        for (int t = 0; t < 4; ++t)
            posters.emplace_back(
                [&]
                {
                    for (int i = 0; i < 10000; ++i)
                        strand.Post([&counter] { ++counter; });
                });
        for (std::thread& poster : posters)
            poster.join();
        strand.WaitIdle(); // nothing queued or running
        // [/guide:strand]
        Check(counter == 40000, "Strand: 40000 unlocked increments from four threads");
    }

    {
        // [guide:keyed]
        // One strand per key, made when work arrives and retired when its queue runs dry. The
        // hook runs around every task, told the key and whether it is a call or a resumption.
        std::atomic<int> calls{0}, resumptions{0};
        TC::Strands::KeyedStrandsOptions<int> options;
        options.aroundTask = [&](const int& /*key*/, TC::Strands::RunTask& task)
        {
            ++(task.Kind() == TC::Strands::TaskKind::Call ? calls : resumptions);
            task(); // exactly once
        };
        TC::Strands::KeyedStrands<int> byUser(scheduler, options);
        std::vector<long> perKey(4, 0); // element k touched only from key k's strand
        for (int i = 0; i < 4000; ++i)
            byUser.Post(i % 4, [&perKey, key = i % 4] { ++perKey[key]; });
        byUser.WaitIdle();
        // [/guide:keyed]
        Check(perKey == std::vector<long>(4, 1000) && calls == 4000 && resumptions == 0,
              "KeyedStrands: four keys, 1000 calls each, hook saw every one");
        Check(byUser.ActiveKeys() == 0 && byUser.StrandsMade() >= 1,
              "KeyedStrands: idle keys hold no strand");
    }

    {
        // [guide:teardown]
        // Seal closes the offer door (TryPost refuses and leaves the work with the caller);
        // Post is still admitted, as every coroutine coming back is. Drain, then Close.
        TC::Strands::Strand strand(scheduler);
        std::atomic<int> ran{0}, refused{0};
        auto work = [&ran] { ++ran; };
        strand.Post(work);
        strand.Seal();
        if (!strand.TryPost(work))
            ++refused;     // ours to run or drop
        strand.Post(work); // admitted after Seal
        strand.WaitIdle();
        strand.Close();    // from here on everything is dropped
        strand.Post(work); // dropped, never run
        // [/guide:teardown]
        Check(ran == 2 && refused == 1, "Seal: TryPost refused, Post admitted; Close drops");
    }

    {
        TC::Strands::Strand strand(scheduler);
        bool backHere = false;
        TC::Synchronization::Latch done(1);
        Handler(&strand, &backHere, &done);
        done.Wait();
        strand.WaitIdle();
        Check(backHere, "ResumeTarget: a thread's callback comes back to the strand");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
