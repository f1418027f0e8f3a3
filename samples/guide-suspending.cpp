// guide-suspending: the code of the "Suspending and resuming" guide. One small primitive, a
// Doorbell, is waited on by each kind of waiter -- a stackful task, a converted thread and a
// coroutine -- and rung from another thread. Prints one line per waiter and exits non-zero if a
// check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization/Latch.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

// [guide:doorbell]
// Lets its one waiter pass once per Ring (rings do not accumulate). Ring may be called from any
// thread, also from a callback; Wait from a task or a converted thread; a coroutine writes
// `while (!bell.TryTake()) co_await TC::SuspendTaskAsync(&bell);`.
class Doorbell : public TC::ISuspendCallback
{
public:
    virtual ~Doorbell() = default;

    void Ring() noexcept
    {
        rung_.store(true);                           // 1. the state ...
        if (auto waiter = waiter_.exchange(nullptr)) // 2. ... then the waiter
            TC::ResumeTask(waiter);
    }

    bool TryTake() noexcept { return rung_.exchange(false); }

    void Wait()
    {
        while (!TryTake())
            TC::SuspendTask(this); // returns once a ResumeTask reached this waiter
    }

private:
    // Runs once the waiter is off the processor, outside any task.
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task); // publish ...
        if (rung_.load())    // ... then re-check; claim the handle back with the same exchange
            if (auto waiter = waiter_.exchange(nullptr))
                TC::ResumeTask(waiter);
    }

    std::atomic<bool> rung_{false};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};
// [/guide:doorbell]

// [guide:handles]
// A TaskHandle names who is running; only a SuspendedTask can be resumed.
template <class Handle>
concept Resumable = requires(Handle handle)
{
    TC::ResumeTask(handle);
};
static_assert(Resumable<TC::SuspendedTask>);
static_assert(!Resumable<TC::TaskHandle>); // ResumeTask(TaskHandle) is deleted
static_assert(sizeof(TC::SuspendedTask) == sizeof(void*));
// [/guide:handles]

// [guide:coroutine]
// A coroutine waits through SuspendTaskAsync: OnSuspended runs inside await_suspend, and the
// coroutine continues on the executor that was current when it suspended.
TC::Strands::DetachedTask RingFromCoroutine(TC::Scheduler* scheduler, Doorbell* bell,
                                   std::atomic<bool>* backOnScheduler,
                                   TC::Synchronization::Latch* done)
{
    co_await scheduler->Schedule(); // now a worker of `scheduler` runs us
    while (!bell->TryTake())
        co_await TC::SuspendTaskAsync(bell);
    backOnScheduler->store(TC::Scheduler::Current() == scheduler);
    done->CountDown();
}
// [/guide:coroutine]
} // namespace

int main()
{
    TC::Scheduler scheduler(2u);

    // [guide:task-waits]
    // A stackful task waits; the main thread rings. The task's worker runs other work meanwhile.
    Doorbell bell;
    TC::JoinHandle waiter = scheduler.Start([&] { bell.Wait(); }, {.name = "waiter"});
    bell.Ring();
    waiter.Join(); // the main thread waits too: as a converted thread
    // [/guide:task-waits]
    Check(!waiter.Joinable(), "task: woken by a Ring from the main thread");

    {
        // [guide:thread-waits]
        // A plain OS thread waits (it is converted on its first wait and blocks on a futex);
        // a task rings.
        Doorbell threadBell;
        std::thread thread([&] { threadBell.Wait(); });
        scheduler.Start([&] { threadBell.Ring(); }).Join();
        thread.join();
        // [/guide:thread-waits]
        Check(true, "converted thread: woken by a Ring from a task");
    }

    {
        Doorbell coroutineBell;
        std::atomic<bool> backOnScheduler{false};
        TC::Synchronization::Latch done(1);
        RingFromCoroutine(&scheduler, &coroutineBell, &backOnScheduler, &done);
        std::thread([&] { coroutineBell.Ring(); }).join(); // rung from a thread of no scheduler
        done.Wait();
        Check(backOnScheduler.load(), "coroutine: rung from a plain thread, back on its scheduler");
    }

    {
        // Identity: GetCurrentTask names the running task, the same before and after a wait.
        TC::TaskHandle before, after;
        scheduler
            .Start(
                [&]
                {
                    before = TC::GetCurrentTask();
                    TC::YieldTask();
                    after = TC::GetCurrentTask();
                })
            .Join();
        Check(before && before == after && before != TC::GetCurrentTask(),
              "GetCurrentTask: stable across a yield, not the main thread's");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
