#pragma once
// The primitives of the "Custom primitives" guide, as the test kit sees them: the
// guide's Mailbox and Latch, and deliberately broken variants the kit must catch. The guide's
// code is verbatim between the "guide:" markers; each class adds only TakeAsync (marked), so
// that coroutines can take from it through the same callback.

#include <TC/Core.h>
#include <TC/Strands/Task.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <cstddef>

namespace Guide
{
// guide: begin
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
    // guide: end

    // Added for the test kit (not in the guide): Take from a coroutine, through the same
    // callback; a resume that finds the mailbox empty loops, as Take does.
    TC::Strands::Task<int> TakeAsync()
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            co_await TC::SuspendTaskAsync(this);
        co_return value;
    }

    // guide: begin
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
// guide: end

// The guide's Mailbox with the re-check removed from OnSuspended: a Put that lands between a
// Take's failed check and the publication of its waiter finds no waiter, and the waiter sleeps
// forever beside its value. The kit must catch it.
class BrokenMailbox : private TC::ISuspendCallback
{
public:
    void Put(int value) noexcept
    {
        value_.store(value, std::memory_order_seq_cst);
        if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
    }

    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            TC::SuspendTask(this);
        return value;
    }

    TC::Strands::Task<int> TakeAsync()
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            co_await TC::SuspendTaskAsync(this);
        co_return value;
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task, std::memory_order_seq_cst); // publishes, and never re-checks
    }

    std::atomic<int> value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// The guide's Mailbox whose re-check resumes without claiming the handle: when a Put and the
// re-check both see the waiter, both resume it. The kit must report a double resume.
class DoubleResumingMailbox : private TC::ISuspendCallback
{
public:
    void Put(int value) noexcept
    {
        value_.store(value, std::memory_order_seq_cst);
        if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
    }

    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            TC::SuspendTask(this);
        return value;
    }

    TC::Strands::Task<int> TakeAsync()
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            co_await TC::SuspendTaskAsync(this);
        co_return value;
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task, std::memory_order_seq_cst);
        if (value_.load(std::memory_order_seq_cst) != 0)
            TC::ResumeTask(task); // no exchange: the handle may also be in a Put's hands
    }

    std::atomic<int> value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// The guide's Mailbox with its race windows marked for the kit (TC::Testing::RaceWindow).
class MarkedMailbox : private TC::ISuspendCallback
{
public:
    void Put(int value) noexcept;
    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            TC::SuspendTask(this);
        return value;
    }
    TC::Strands::Task<int> TakeAsync()
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            co_await TC::SuspendTaskAsync(this);
        co_return value;
    }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override;

    std::atomic<int> value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// The guide's request/reply service and client, for any of the mailboxes above.
template <class Box>
void Serve(Box& requests, Box& replies) noexcept
{
    for (int request; (request = requests.Take()) > 0;)
        replies.Put(request * 2);
}

template <class Box>
int Ask(Box& requests, Box& replies, int request) noexcept
{
    requests.Put(request);
    return replies.Take();
}
} // namespace Guide
