// guide-coroutines: the code of the "Coroutines and the resume context" guide -- Task<T>,
// SyncRun, WhenAll, WhenAny, stop tokens, and where a coroutine continues after a wait: on the
// strand, on the scheduler, or inline on the resuming thread. Prints one line per case and exits
// non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <string_view>
#include <thread>

namespace Sync = TC::Synchronization;

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-62s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

// [guide:task]
// Lazy: nothing runs until the Task is awaited (or started by its owner). Parameters are values:
// a reference would dangle once the coroutine suspends.
TC::Strands::Task<int> Length(std::string_view text)
{
    co_return static_cast<int>(text.size());
}

TC::Strands::Task<int> TotalLength()
{
    const int a = co_await Length("four");  // the child runs here, and returns when done ...
    const int b = co_await Length("three"); // ... and its frame is freed at the end of the line
    co_return a + b;
}
// [/guide:task]

// Runs a root task for its effects and counts `done` down at its end.
TC::Strands::DetachedTask Drive(TC::Strands::Task<void> task, Sync::Latch* done)
{
    co_await std::move(task);
    done->CountDown();
}

// [guide:when-all]
TC::Strands::Task<void> AddOnWorker(TC::Scheduler* workers, std::atomic<int>* total, int n)
{
    co_await workers->Schedule(); // each child continues on a worker: they run in parallel
    *total += n;
}

TC::Strands::Task<void> AddAll(TC::Scheduler* workers, std::atomic<int>* total)
{
    co_await TC::Strands::WhenAll(AddOnWorker(workers, total, 1), AddOnWorker(workers, total, 2),
                         AddOnWorker(workers, total, 3)); // resumes once all three finished
}
// [/guide:when-all]

// [guide:when-any]
// Waits for an item that never comes: it unwinds when its flow's token is stopped (Pop throws
// OperationCancelled).
TC::Strands::Task<void> WaitForever(TC::Strands::AsyncQueue<int>* queue)
{
    (void)co_await queue->Pop();
}

TC::Strands::Task<void> Quick()
{
    co_return;
}

TC::Strands::Task<void> Race(TC::Scheduler* workers, TC::Strands::AsyncQueue<int>* queue,
                    std::optional<std::size_t>* winner)
{
    co_await workers->Schedule();
    // Quick completes, stops the token WaitForever inherited, and WhenAny resumes us once both
    // children have finished.
    *winner = co_await TC::Strands::WhenAny(WaitForever(queue), Quick());
}
// [/guide:when-any]

// [guide:stop-token]
// A root task observes the token its owner gives it; everything it awaits inherits it.
TC::Strands::Task<bool> UntilStopped(TC::Strands::AsyncQueue<int>* queue)
{
    const TC::Strands::StopToken token = co_await TC::Strands::ThisCoroStopToken(); // never suspends
    bool cancelled = false;
    try
    {
        (void)co_await queue->Pop();
    }
    catch (const TC::Strands::OperationCancelled&)
    {
        cancelled = true; // unwound through RAII; co_await is not allowed in a handler
    }
    co_return cancelled&& token.stop_requested();
}
// [/guide:stop-token]

// [guide:resume-context]
// The same wait from three places. A coroutine that awaits any primitive continues on the
// executor that was current when it suspended -- whoever sets the event, from whatever thread.
TC::Strands::DetachedTask OnStrand(TC::Strands::Strand* strand, Sync::AutoResetEvent_s* event, bool* here,
                          Sync::Latch* done)
{
    co_await TC::Strands::ResumeOn{*strand};
    co_await *event;               // set by a plain thread ...
    *here = strand->RunningHere(); // ... and still back on the strand
    done->CountDown();
}

TC::Strands::DetachedTask OnScheduler(TC::Scheduler* scheduler, Sync::AutoResetEvent_s* event, bool* here,
                             Sync::Latch* done)
{
    co_await scheduler->Schedule();
    co_await *event;
    *here = TC::Scheduler::Current() == scheduler; // on one of its workers
    done->CountDown();
}

TC::Strands::DetachedTask Nowhere(Sync::AutoResetEvent_s* event, std::thread::id* ranOn)
{
    co_await *event; // no executor was current: it continues inline on the setting thread
    *ranOn = std::this_thread::get_id();
}
// [/guide:resume-context]
} // namespace

int main()
{
    TC::Scheduler workers(2u);

    // [guide:sync-run]
    const int total = TC::Strands::SyncRun(TotalLength()); // drives a task that never parks
    // [/guide:sync-run]
    Check(total == 9, "Task<int> chain driven by SyncRun");

    {
        std::atomic<int> sum{0};
        Sync::Latch done(1);
        Drive(AddAll(&workers, &sum), &done);
        done.Wait();
        Check(sum == 6, "WhenAll: three children on the workers");
    }

    {
        TC::Strands::AsyncQueue<int> queue(workers);
        std::optional<std::size_t> winner;
        Sync::Latch done(1);
        Drive(Race(&workers, &queue, &winner), &done);
        done.Wait();
        Check(winner == 1u && !queue.HasWaiter(),
              "WhenAny: Quick (index 1) won, the loser unwound");
    }

    {
        // [guide:stop-source]
        TC::Scheduler host(0u); // no workers: this thread pumps it
        TC::Strands::AsyncQueue<int> queue(host);
        TC::Strands::StopSource source;
        TC::Strands::Task<bool> task = UntilStopped(&queue);
        task.SetStopToken(source.get_token()); // before it starts; an awaited task inherits
        const bool cancelled = TC::Strands::SyncRunWith(
            std::move(task),
            [&]
            {
                source.request_stop(); // Pop's stop callback hands the coroutine to `host` ...
                host.RunUntilIdle();   // ... which runs it to its end, here
            });
        // [/guide:stop-source]
        Check(cancelled, "stop token: a parked Pop unwinds with OperationCancelled");
    }

    {
        TC::Strands::Strand strand(workers);
        Sync::AutoResetEvent_s event;
        bool here = false;
        Sync::Latch done(1);
        OnStrand(&strand, &event, &here, &done);
        while (!event.IsSuspended())
            std::this_thread::yield(); // let it park first: the point is a real suspension
        std::thread([&] { event.Set(); }).join();
        done.Wait();
        strand.WaitIdle();
        Check(here, "resume context: set from a thread, back on the strand");
    }
    {
        Sync::AutoResetEvent_s event;
        bool here = false;
        Sync::Latch done(1);
        OnScheduler(&workers, &event, &here, &done);
        while (!event.IsSuspended())
            std::this_thread::yield();
        std::thread([&] { event.Set(); }).join();
        done.Wait();
        Check(here, "resume context: set from a thread, back on the scheduler");
    }
    {
        Sync::AutoResetEvent_s event;
        std::thread::id ranOn;
        Nowhere(&event, &ranOn); // parks at once: nothing is set
        std::thread setter([&] { event.Set(); });
        const std::thread::id setterId = setter.get_id();
        setter.join();
        Check(ranOn == setterId, "resume context: none current, inline on the setting thread");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
