// guide-events: the code of the "Events" and "Single-waiter variants" guides. Each primitive is
// driven from tasks (and the main thread, a converted thread) and its promise checked. Prints one
// line per primitive and exits non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace Sync = TC::Synchronization;

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-60s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

// [guide:signal-then-free]
// Runs job(argument) as a task on `workers` and waits for it. The event lives in this frame and
// dies as soon as Wait returns: Set's last access to it is the one exchange that hands the
// waiter over, so the task that calls Set never touches a destroyed event.
int RunOnWorkers(TC::Scheduler& workers, int (*job)(int), int argument)
{
    Sync::AutoResetEvent_s done;
    int result = 0;
    workers
        .Start(
            [&done, &result, job, argument]
            {
                result = job(argument);
                done.Set(); // the last access to `done` (and to this frame)
            })
        .Detach();
    done.Wait();
    return result;
}
// [/guide:signal-then-free]

int Square(int x)
{
    return x * x;
}

// [guide:bounded-buffer]
// A bounded buffer on Mutex and ConditionVariable. The predicate forms loop, so a stolen
// wake-up (another owner took the item between the notify and this waiter's turn) is harmless.
class BoundedBuffer
{
public:
    explicit BoundedBuffer(std::size_t capacity) : capacity_(capacity) {}

    void Push(int value)
    {
        std::unique_lock lock(mutex_);
        notFull_.Wait(lock, [&] { return items_.size() < capacity_; });
        items_.push_back(value);
        notEmpty_.NotifyOne();
    }

    int Pop()
    {
        std::unique_lock lock(mutex_);
        notEmpty_.Wait(lock, [&] { return !items_.empty(); });
        const int value = items_.front();
        items_.pop_front();
        notFull_.NotifyOne();
        return value;
    }

private:
    Sync::Mutex mutex_;
    Sync::ConditionVariable notFull_, notEmpty_;
    std::deque<int> items_;
    std::size_t capacity_;
};
// [/guide:bounded-buffer]
} // namespace

int main()
{
    TC::EnableTimers();
    TC::Scheduler scheduler(2u);

    {
        int sum = 0;
        for (int i = 1; i <= 1000; ++i)
            sum += RunOnWorkers(scheduler, Square, i % 10); // from the main thread
        scheduler
            .Start(
                [&]
                {
                    for (int i = 1; i <= 1000; ++i)
                        sum += RunOnWorkers(scheduler, Square, i % 10); // from a task
                })
            .Join();
        Check(sum == 2 * 100 * 285, "AutoResetEvent_s: 2000 events freed right after Wait");
    }

    {
        // [guide:single-timeout]
        Sync::ManualResetEvent_s ready;
        const bool early = ready.Wait(5ms); // false: nobody set it within 5 ms
        ready.Set();
        const bool open = ready.Wait(5ms); // true: it stays set until Reset ...
        ready.Wait();                      // ... so this passes at once too
        ready.Reset();
        // [/guide:single-timeout]
        Check(!early && open && !ready.IsSet(), "ManualResetEvent_s: timeout, set, reset");
    }

    {
        // [guide:auto-reset]
        // Three tasks wait on one AutoResetEvent; each Set lets exactly one of them through.
        Sync::AutoResetEvent event;
        std::atomic<int> passed{0};
        std::vector<TC::JoinHandle> waiters;
        for (int i = 0; i < 3; ++i)
            waiters.push_back(scheduler.Start(
                [&]
                {
                    event.Wait();
                    ++passed;
                }));
        for (int i = 0; i < 3; ++i)
        {
            event.Set(); // resumes one waiter, or leaves the event set for the next Wait
            while (passed.load() == i)
                std::this_thread::yield(); // Sets do not count: one at a time, or one is lost
        }
        for (TC::JoinHandle& waiter : waiters)
            waiter.Join();
        // Sets do not accumulate: two Sets with nobody waiting let one waiter pass.
        event.Set();
        event.Set();
        const bool first = event.TryWait(), second = event.TryWait(); // true, false
        // [/guide:auto-reset]
        Check(passed == 3 && first && !second, "AutoResetEvent: one waiter per Set, no counting");
    }

    {
        // [guide:manual-reset]
        // A ManualResetEvent is a gate: Set resumes everyone waiting and lets later waiters
        // through until Reset.
        Sync::ManualResetEvent gate;
        std::atomic<int> through{0};
        std::vector<TC::JoinHandle> waiters;
        for (int i = 0; i < 4; ++i)
            waiters.push_back(scheduler.Start(
                [&]
                {
                    gate.Wait();
                    ++through;
                }));
        gate.Set();
        for (TC::JoinHandle& waiter : waiters)
            waiter.Join();
        gate.Wait(); // passes at once while set
        // [/guide:manual-reset]
        Check(through == 4 && gate.IsSet(), "ManualResetEvent: Set opens the gate for all");
    }

    {
        // [guide:latch]
        // Workers count down a Latch; the main thread waits until all have finished, then may
        // destroy it at once.
        Sync::Latch finished(4);
        std::atomic<int> work{0};
        for (int i = 0; i < 4; ++i)
            scheduler
                .Start(
                    [&]
                    {
                        ++work;
                        finished.CountDown();
                    })
                .Detach();
        finished.Wait();
        // [/guide:latch]
        Check(work == 4 && finished.Count() == 0, "Latch: Wait returns once counted to zero");
    }

    {
        // [guide:semaphore]
        // At most two of eight tasks inside at once.
        Sync::Semaphore permits(2);
        std::atomic<int> inside{0}, most{0};
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 8; ++i)
            tasks.push_back(scheduler.Start(
                [&]
                {
                    permits.Acquire();
                    const int now = ++inside;
                    int seen = most.load();
                    while (now > seen && !most.compare_exchange_weak(seen, now))
                    {
                    }
                    TC::YieldTask();
                    --inside;
                    permits.Release();
                }));
        for (TC::JoinHandle& task : tasks)
            task.Join();
        const bool timedOut = !Sync::Semaphore(0).Acquire(5ms); // no permit: false after 5 ms
        // [/guide:semaphore]
        Check(most <= 2 && most >= 1 && permits.Available() == 2 && timedOut,
              "Semaphore: never more than two inside, timed Acquire");
    }

    {
        // [guide:barrier]
        // Three participants, three phases; exactly one arrival per phase is told it completed it.
        Sync::Barrier barrier(3);
        std::atomic<int> completers{0};
        std::vector<TC::JoinHandle> participants;
        for (int p = 0; p < 3; ++p)
            participants.push_back(scheduler.Start(
                [&]
                {
                    for (int phase = 0; phase < 3; ++phase)
                        if (barrier.ArriveAndWait())
                            ++completers;
                }));
        for (TC::JoinHandle& participant : participants)
            participant.Join();
        // [/guide:barrier]
        Check(completers == 3, "Barrier: one completing arrival per phase");
    }

    {
        // [guide:wait-group]
        // Add before starting the work, Done when it ends, Wait for the count to reach zero.
        Sync::WaitGroup group;
        std::atomic<int> done{0};
        for (int round = 0; round < 2; ++round) // reusable once it reached zero
        {
            group.Add(3);
            for (int i = 0; i < 3; ++i)
                scheduler
                    .Start(
                        [&]
                        {
                            ++done;
                            group.Done();
                        })
                    .Detach();
            group.Wait();
        }
        // [/guide:wait-group]
        Check(done == 6 && group.Count() == 0, "WaitGroup: two rounds of three");
    }

    {
        BoundedBuffer buffer(4);
        long sum = 0;
        TC::JoinHandle consumer = scheduler.Start(
            [&]
            {
                for (int i = 0; i < 3000; ++i)
                    sum += buffer.Pop();
            });
        std::vector<TC::JoinHandle> producers;
        for (int p = 0; p < 3; ++p)
            producers.push_back(scheduler.Start(
                [&]
                {
                    for (int i = 1; i <= 1000; ++i)
                        buffer.Push(i);
                }));
        std::thread threadProducer([&] { buffer.Push(0); }); // a converted thread joins in
        for (TC::JoinHandle& producer : producers)
            producer.Join();
        consumer.Join();
        threadProducer.join();
        const int last = buffer.Pop(); // the one item left over: a 0 or a value
        Check(sum + last == 3 * 500500, "Mutex + ConditionVariable: bounded buffer");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
