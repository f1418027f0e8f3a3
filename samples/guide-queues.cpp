// guide-queues: the code of the "Queues and stacks" guide -- Mailbox<T>, Channel<T> bounded and
// unbounded with Close, waiters chained on ConcurrentStack and BasicStack, and AsyncQueue. Prints
// one line per case and exits non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
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

// [guide:gate]
// Opens once; any number of waiters. Waiters are chained through their entries' `next` link on
// a lock-free ConcurrentStack, so waiting allocates nothing. PopAll hands each entry to exactly
// one caller, which is the claim that makes every handle reach ResumeTask once.
class Gate : public TC::ISuspendCallback
{
public:
    virtual ~Gate() = default;

    void Open() noexcept
    {
        open_.store(true); // the state first ...
        // PopAll peeks at the head with a relaxed load: the fence keeps that peek after the
        // store, the resumer's half of the store-load pairing with OnSuspended.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ResumeAll(); // ... then the waiters
    }

    void Wait()
    {
        if (!open_.load())
            TC::SuspendTask(this); // one ResumeTask per wait: no loop needed, the gate stays open
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiters_.Push(task.Entry()); // publish (the entry's `next` is ours until ResumeTask) ...
        std::atomic_thread_fence(std::memory_order_seq_cst); // Push is only a release CAS
        if (open_.load())                                    // ... then re-check
            ResumeAll();
    }

    void ResumeAll() noexcept
    {
        TC::SuspendedTaskEntry* entry = waiters_.PopAll();
        while (entry)
        {
            TC::SuspendedTaskEntry* next = entry->next; // read the link before giving it back
            TC::ResumeTask(TC::SuspendedTask(entry));
            entry = next;
        }
    }

    std::atomic<bool> open_{false};
    TC::ConcurrentStack<TC::SuspendedTaskEntry> waiters_;
};
// [/guide:gate]

// [guide:fifo-gate]
// The same gate with waiters resumed in arrival order: a BasicStack under the object's own
// mutex, reversed before resuming. The lock is held only for pointer moves, never across a
// ResumeTask, and OnSuspended may take it (it runs outside any task and only blocks the thread
// for a moment; it must not wait through the kernel).
class FifoGate : public TC::ISuspendCallback
{
public:
    virtual ~FifoGate() = default;

    void Open() noexcept
    {
        std::unique_lock lock(mutex_);
        open_ = true;
        TC::BasicStack<TC::SuspendedTaskEntry> waiters(std::move(waiters_)); // take them all
        lock.unlock();
        waiters.Reverse(); // oldest first
        while (TC::SuspendedTaskEntry* entry = waiters.Pop())
            TC::ResumeTask(TC::SuspendedTask(entry)); // Pop read `next` before this
    }

    void Wait()
    {
        {
            std::lock_guard lock(mutex_);
            if (open_)
                return;
        }
        TC::SuspendTask(this);
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        {
            std::lock_guard lock(mutex_); // check and publish in one step
            if (!open_)
            {
                waiters_.Push(task.Entry());
                return;
            }
        }
        TC::ResumeTask(task); // opened meanwhile: never published, ours to resume
    }

    std::mutex mutex_;
    bool open_ = false;
    TC::BasicStack<TC::SuspendedTaskEntry> waiters_;
};
// [/guide:fifo-gate]

// [guide:async-queue]
// One coroutine consumes; any thread pushes. Pop yields std::nullopt once the queue is closed
// and drained; the consumer always continues where it parked (here: on its strand).
TC::Strands::DetachedTask Consume(TC::Strands::AsyncQueue<int>* queue, TC::Strands::Strand* strand, long* sum,
                         std::atomic<bool>* onStrand, Sync::Latch* done)
{
    co_await TC::Strands::ResumeOn{*strand};
    while (std::optional<int> item = co_await queue->Pop())
    {
        *sum += *item;
        *onStrand = *onStrand && strand->RunningHere();
    }
    done->CountDown();
}
// [/guide:async-queue]
} // namespace

int main()
{
    TC::EnableTimers();
    TC::Scheduler scheduler(2u);

    {
        // [guide:mailbox]
        // A Mailbox<T> holds one value for one taker; a second Put replaces an untaken value.
        Sync::Mailbox<std::string> box;
        box.Put("first");
        const bool replaced = box.Put("second");         // true: "first" was never taken
        std::string taken = box.Take();                  // "second", without suspending
        std::optional<std::string> none = box.Take(5ms); // std::nullopt after 5 ms
        // [/guide:mailbox]
        Check(replaced && taken == "second" && !none, "Mailbox<T>: replace, take, timed take");
    }

    {
        // [guide:channel]
        // A bounded channel of 4: three producer tasks, one consumer task, Close when the
        // producers are done. Receive drains what was sent, then answers std::nullopt.
        Sync::Channel<int> channel(4);
        std::vector<TC::JoinHandle> producers;
        for (int p = 0; p < 3; ++p)
            producers.push_back(scheduler.Start(
                [&]
                {
                    for (int i = 1; i <= 1000; ++i)
                        channel.Send(i); // suspends while the channel holds 4
                }));
        long sum = 0;
        TC::JoinHandle consumer = scheduler.Start(
            [&]
            {
                while (std::optional<int> value = channel.Receive())
                    sum += *value;
            });
        for (TC::JoinHandle& producer : producers)
            producer.Join();
        channel.Close(); // the consumer drains, then Receive returns std::nullopt
        consumer.Join();
        const bool refused = !channel.Send(1); // closed: refused, the value dropped
        // [/guide:channel]
        Check(sum == 3 * 500500 && refused, "Channel<int>(4): 3000 values, Close, Send refused");
    }

    {
        // [guide:channel-try]
        Sync::Channel<int> unbounded; // capacity 0: Send never waits
        Sync::Channel<int> bounded(1);
        int out = 0;
        const auto ok = bounded.TrySend(7);                // Ok
        const auto full = bounded.TrySend(8);              // Full
        const auto empty = unbounded.TryReceive(out);      // Empty
        const auto timedOut = unbounded.Receive(out, 5ms); // TimedOut
        unbounded.Close();
        const auto closed = unbounded.TryReceive(out); // Closed (and drained)
        // [/guide:channel-try]
        using S = Sync::ChannelStatus;
        Check(ok == S::Ok && full == S::Full && empty == S::Empty && timedOut == S::TimedOut &&
                  closed == S::Closed,
              "Channel: TrySend/TryReceive/timed Receive statuses");
    }

    {
        Gate gate;
        std::atomic<int> through{0};
        std::vector<TC::JoinHandle> waiters;
        for (int i = 0; i < 50; ++i)
            waiters.push_back(scheduler.Start(
                [&]
                {
                    gate.Wait();
                    ++through;
                }));
        std::thread opener([&] { gate.Open(); });
        for (TC::JoinHandle& waiter : waiters)
            waiter.Join();
        opener.join();
        Check(through == 50, "Gate on ConcurrentStack: 50 waiters, each resumed once");
    }

    {
        // Deterministic order: a host-pumped scheduler runs each task until it waits, in order.
        TC::Scheduler host(0u);
        FifoGate gate;
        std::string order;
        for (char name : std::string("abcd"))
            host.Start(
                    [&order, &gate, name]
                    {
                        gate.Wait();
                        order += name;
                    })
                .Detach();
        host.RunUntilIdle(); // all four wait, a first
        gate.Open();
        host.RunUntilIdle();
        Check(order == "abcd", "FifoGate on BasicStack: resumed in arrival order");
    }

    {
        TC::Strands::Strand strand(scheduler);
        TC::Strands::AsyncQueue<int> queue(scheduler);
        long sum = 0;
        std::atomic<bool> onStrand{true};
        Sync::Latch done(1);
        Consume(&queue, &strand, &sum, &onStrand, &done);
        std::thread producer(
            [&]
            {
                for (int i = 1; i <= 1000; ++i)
                    queue.Push(i);
                queue.Close();
            });
        producer.join();
        done.Wait();
        strand.WaitIdle();
        Check(sum == 500500 && onStrand, "AsyncQueue: 1000 items to a coroutine on a strand");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
