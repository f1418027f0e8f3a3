// guide-custom-primitives: the code of the "Custom primitives" guide, run from several tasks.
// Everything between the "guide:" markers is the guide's text verbatim; the rest drives it and
// checks the results. Prints four lines and exits non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <span>
#include <vector>

using namespace std::chrono_literals;

struct Part
{
    int size;
};

// Stands in for real work: part n (1, 2, 3) loads 138 * n units.
void Load(Part& part) noexcept
{
    part.size *= 138;
}

// The guide's Mailbox derives privately from ISuspendCallback, whose destructor is protected and
// non-virtual; -Wnon-virtual-dtor flags that although nothing can delete a Mailbox through it.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#endif

// The guide block stays exactly as the guide prints it.
// clang-format off
// guide: begin
// [guide:mailbox]
// Holds one int (0 means empty) for one waiting task. Put may be called from any
// thread.
class Mailbox : private TC::ISuspendCallback
{
public:
    void Put(int value) noexcept
    {
        value_.store(value, std::memory_order_seq_cst); // 1. state
        if (auto waiter
            = waiter_.exchange(nullptr, std::memory_order_acq_rel)) // 2. waiter
            TC::ResumeTask(waiter); // whoever takes the handle resumes
    }

    // Task or converted thread only; at most one waiter at a time.
    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            TC::SuspendTask(
                this); // calls OnSuspended once this task is off the processor
        return value;
    }

    // Returns false if nothing arrived in time (needs EnableTimers, else no limit).
    bool Take(int& value, TC::Duration timeout) noexcept
    {
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            if (!TC::SuspendTaskFor(this, timeout))
                return false; // OnTimeout took the task back
        return true;
    }

private:
    // Runs on the scheduler thread, outside any task: must not suspend, yield or
    // wait.
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task, std::memory_order_seq_cst);  // 1. publish the waiter
        if (value_.load(std::memory_order_seq_cst) != 0) // 2. re-check the state:
            if (auto waiter = waiter_.exchange(
                    nullptr, std::memory_order_acq_rel)) // a Put may have
                TC::ResumeTask(waiter);                  // missed the waiter
    }

    // Runs on the timer thread while the task is still suspended: take the handle
    // back, or report that a resumer has it already.
    bool OnTimeout(TC::SuspendedTask task) noexcept override
    {
        TC::SuspendedTask expected = task;
        return waiter_.compare_exchange_strong(expected, nullptr,
                                               std::memory_order_acq_rel);
    }

    std::atomic<int>               value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// [/guide:mailbox]

// [guide:using-mailbox]
// A service task: answers requests until it receives a negative one. Values must
// not be 0, which is the mailbox's "empty".
void Serve(Mailbox& requests, Mailbox& replies) noexcept
{
    for (int request; (request = requests.Take()) > 0;)
        replies.Put(request * 2); // ... compute the answer here ...
}

// Called by one task at a time: asks and waits for the answer.
int Ask(Mailbox& requests, Mailbox& replies, int request) noexcept
{
    requests.Put(request);
    return replies.Take();
}

// [/guide:using-mailbox]

// [guide:latch]
// Opens once CountDown has been called count times; any number of tasks may wait.
// Waitable supplies Wait(): it calls TryWait, suspends if that fails, and re-checks
// after the task has been published (then it calls Resume).
class Latch : public TC::Synchronization::Waitable<
                  TC::Synchronization::SuspensionKind::Multiple, Latch>
{
public:
    explicit Latch(std::size_t count) noexcept : count_(count) {}

    void CountDown() noexcept
    {
        if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            Resume(); // the last one opens the latch
    }

    // Required by Waitable: non-blocking check of the condition.
    bool TryWait() noexcept { return count_.load(std::memory_order_acquire) == 0; }

    // Required by Waitable: resume the tasks the condition lets pass (all of them).
    void Resume() noexcept
    {
        TC::Synchronization::SuspendableBase<
            TC::Synchronization::SuspensionKind::Multiple>::Resume();
    }

private:
    std::atomic<std::size_t> count_;
};

// [/guide:latch]

// [guide:latch-use]
// Each worker prepares its part and counts the latch down.
void PreparePart(Latch& prepared, Part& part) noexcept
{
    Load(part);
    prepared.CountDown();
}

// Any number of tasks may wait until every part is prepared.
int TotalSize(Latch& prepared, std::span<const Part> parts) noexcept
{
    prepared.Wait();
    int total = 0;
    for (const Part& part : parts)
        total += part.size;
    return total;
}
// [/guide:latch-use]
// guide: end
// clang-format on

int main()
{
    TC::EnableTimers();
    // The mailboxes outlive the scheduler: a mailbox's re-check in OnSuspended may still run on a
    // worker after its waiter was resumed and returned (the guide's lifetime rule), and the
    // scheduler's destructor joins those workers.
    Mailbox requests;
    Mailbox replies;
    Mailbox silent;
    TC::Scheduler scheduler(2u); // two worker threads
    bool ok = true;

    // Mailbox: a service task answers 10 000 requests from a client task.
    {
        long long sum = 0;
        auto service = scheduler.Start([&] { Serve(requests, replies); });
        auto client = scheduler.Start(
            [&]
            {
                for (int i = 1; i <= 10000; ++i)
                    sum += Ask(requests, replies, i);
                requests.Put(-1); // stops the service
            });
        client.Join();
        service.Join();
        std::printf("mailbox:  sum %lld\n", sum);
        ok = ok && sum == 100010000;
    }

    // Timeout: nobody answers, so a timed Take gives up.
    {
        bool timedOut = false;
        scheduler
            .Start(
                [&]
                {
                    int value = 0;
                    timedOut = !silent.Take(value, 20ms);
                })
            .Join();
        std::printf("timeout:  %s\n", timedOut ? "timed out" : "got a value");
        ok = ok && timedOut;
    }

    // Latch: three workers prepare parts while three tasks wait for the total.
    {
        std::vector<Part> parts{{1}, {2}, {3}};
        Latch prepared(parts.size());
        std::atomic<int> agreeing{0};
        std::vector<TC::JoinHandle> tasks;
        for (int w = 0; w < 3; ++w)
            tasks.push_back(scheduler.Start(
                [&]
                {
                    if (TotalSize(prepared, parts) == 828)
                        agreeing.fetch_add(1);
                }));
        for (Part& part : parts)
            tasks.push_back(scheduler.Start([&prepared, &part] { PreparePart(prepared, part); }));
        for (TC::JoinHandle& task : tasks)
            task.Join();
        const int total = TotalSize(prepared, parts); // the main thread passes the open latch
        const bool all = agreeing.load() == 3;
        std::printf("latch:    total %d, seen by all three waiters: %s\n", total,
                    all ? "yes" : "no");
        ok = ok && total == 828 && all;
    }

    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
