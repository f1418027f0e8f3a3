#pragma once
// Latch: opens once it has been counted down to zero; any number of waiters pass from then on.
// A CountDown is one fetch_sub; a Wait on an open latch is one load.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Synchronization/detail/OneWordEvent.h>

#include <atomic>
#include <cstddef>

namespace TC::Synchronization
{
/// ```cpp
/// Latch loaded(3);  // three loaders each call loaded.CountDown(); the renderer: loaded.Wait();
/// ```
/// - Single use. CountDown from any thread; the zeroing one resumes every waiter, newest first.
/// - Destruction: by any waiter once its Wait returned, if nobody counts down or starts a wait
///   any more; also by a coroutine with no executor resumed inside the opening CountDown.
/// - A timed waiter counts as waiting until its Wait returned: destroy the latch only once every
///   timed Wait on it has returned.
class Latch
{
public:
    explicit Latch(std::size_t count) noexcept : count_(count), opened_(count == 0) {}
    Latch(const Latch&) = delete;
    Latch& operator=(const Latch&) = delete;

    // Counts down by n; the call reaching zero resumes every waiter. Below zero: checked failure.
    void CountDown(std::size_t n = 1) noexcept
    {
        // acq_rel (design notes); the last access unless it reaches zero.
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

    // Returns at once if open, else suspends until zero. Task or converted thread only.
    void Wait() { opened_.Wait(); }

    // As Wait; false once `timeout` passed (no limit without EnableTimers); count untouched.
    bool Wait(Duration timeout) { return opened_.Wait(timeout); }

    // co_await latch / latch.WaitAsync(); resumes on the executor current when it suspended.
    using WaitAwaiter = detail::OneWordEvent<true>::WaitAwaiter;
    WaitAwaiter WaitAsync() noexcept { return opened_.WaitAsync(); }
    WaitAwaiter operator co_await() noexcept { return opened_.WaitAsync(); }

    // co_await latch.WaitAsync(timeout): yields Wait(timeout)'s answer.
    using WaitForAwaiter = detail::OneWordEvent<true>::WaitForAwaiter;
    WaitForAwaiter WaitAsync(Duration timeout) noexcept { return opened_.WaitAsync(timeout); }

    // Snapshot: a waiter is suspended.
    bool IsSuspended() const noexcept { return opened_.IsSuspended(); }

    // A snapshot of the count.
    std::size_t Count() const noexcept { return count_.load(std::memory_order_acquire); }

private:
    // Its own type, so checked-mode reports name the Latch.
    class Opened final : public detail::OneWordEvent<true>
    {
    public:
        explicit Opened(bool initiallySet) noexcept : OneWordEvent(initiallySet) {}
    };

    std::atomic<std::size_t> count_;
    Opened opened_;
};
} // namespace TC::Synchronization
