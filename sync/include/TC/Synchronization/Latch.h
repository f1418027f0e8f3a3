#pragma once
// Latch: opens once it has been counted down to zero; any number of waiters pass from then on.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Synchronization/detail/OneWordEvent.h>

#include <atomic>
#include <cstddef>

namespace TC::Synchronization
{
// A single-use countdown. CountDown may be called from any thread; Wait suspends (a task or a
// converted thread; coroutines co_await) until the count reaches zero, and returns at once after.
// The CountDown that reaches zero resumes every waiter, newest first.
//
// Design: the count in one word, and the opening in a one-word manual-reset event
// (detail::OneWordEvent): a CountDown is one fetch_sub, and the one that reaches zero then opens
// the event with one compare-exchange, which also claims every suspended waiter. A Wait is a
// load of the event's word, plus one compare-exchange when it suspends. Ordering: every
// fetch_sub is acq_rel, so the one that reaches zero reads the end of the chain of earlier ones
// and its compare-exchange (release) passes all their callers' writes on to every waiter that
// passes.
//
// Destruction: by any waiter as soon as its Wait returned, provided nobody counts it down or
// starts a wait any more. Nothing touches the latch after the exchange that opens it (the waiters
// are resumed through their own entries), and a CountDown that does not reach zero touches
// nothing after its fetch_sub, so no CountDown can still be inside the object then. A coroutine
// with no executor, resumed inline inside the opening CountDown, may destroy it too.
/// - Timed waits: a timed waiter counts as waiting until its Wait returned (its timeout may be
///   unlinking it on the timer thread while the opening resumes it), so destroy the latch only
///   once every timed Wait on it has returned.
class Latch
{
public:
    explicit Latch(std::size_t count) noexcept : count_(count), opened_(count == 0) {}
    Latch(const Latch&) = delete;
    Latch& operator=(const Latch&) = delete;

    // Counts down by n (1 by default); the call that reaches zero resumes every waiter.
    // Counting below zero is a caller error (checked mode fails it).
    void CountDown(std::size_t n = 1) noexcept
    {
        // acq_rel: see the design note above. The last access unless it reaches zero.
        const std::size_t before = count_.fetch_sub(n, std::memory_order_acq_rel);
        TC_CHECK(before >= n, "a Latch is counted down at most its count",
                 "Latch::CountDown below zero");
        if (before == n)
            opened_.Set(); // its exchange is the last access
    }

    // CountDown(n), then Wait().
    void ArriveAndWait(std::size_t n = 1)
    {
        CountDown(n);
        Wait();
    }

    // True once the count reached zero and the latch opened; never suspends.
    bool TryWait() const noexcept { return opened_.IsSet(); }

    // Returns at once if open; otherwise suspends until the count reaches zero. From a task or a
    // converted thread (not from a callback, not from a worker thread outside a task).
    void Wait() { opened_.Wait(); }

    // As Wait, but gives up after `timeout` (no limit without EnableTimers): true if the latch
    // opened, false on timeout. A timed-out waiter is unlinked; the count is not touched.
    bool Wait(Duration timeout) { return opened_.Wait(timeout); }

    // co_await latch, co_await latch.WaitAsync(): the coroutine form; the coroutine continues
    // on the executor that was current when it suspended.
    using WaitAwaiter = detail::OneWordEvent<true>::WaitAwaiter;
    WaitAwaiter WaitAsync() noexcept { return opened_.WaitAsync(); }
    WaitAwaiter operator co_await() noexcept { return opened_.WaitAsync(); }

    // co_await latch.WaitAsync(timeout): yields Wait(timeout)'s answer.
    using WaitForAwaiter = detail::OneWordEvent<true>::WaitForAwaiter;
    WaitForAwaiter WaitAsync(Duration timeout) noexcept { return opened_.WaitAsync(timeout); }

    // A snapshot: true if a waiter was suspended at the moment of the load.
    bool IsSuspended() const noexcept { return opened_.IsSuspended(); }

    // A snapshot of the count.
    std::size_t Count() const noexcept { return count_.load(std::memory_order_acquire); }

private:
    // Its own type, so that checked mode's reports name the Latch a waiter suspended on.
    class Opened final : public detail::OneWordEvent<true>
    {
    public:
        explicit Opened(bool initiallySet) noexcept : OneWordEvent(initiallySet) {}
    };

    std::atomic<std::size_t> count_;
    Opened opened_;
};
} // namespace TC::Synchronization
