#pragma once
// Latch: opens once it has been counted down to zero; any number of waiters pass from then on.

#include <TC/Synchronization/Waitable.h>
#include <TC/Synchronization/detail/BusyCount.h>

#include <atomic>
#include <cstddef>

namespace TC::Synchronization
{
// A single-use countdown. CountDown may be called from any thread; Wait suspends (a task or a
// converted thread; coroutines co_await) until the count reaches zero, and returns at once after.
//
// Destruction: by any waiter as soon as its Wait returned (Wait returns only once every
// CountDown that was running has left the object), provided nobody counts it down or starts a
// wait any more. The task or thread that constructed it is resumed last. Exception: a coroutine
// with no executor is resumed inline, inside the CountDown that opened the latch, and returns
// into it; it must leave the latch alive.
class Latch : public Waitable<SuspensionKind::Multiple, Latch>
{
public:
    explicit Latch(std::size_t count) noexcept : count_(count) {}

    // Counts down by n (1 by default); the call that reaches zero resumes every waiter.
    // Counting below zero is a caller error (checked mode fails it).
    void CountDown(std::size_t n = 1) noexcept
    {
        detail::BusyCount::Scope busy(busy_); // ends with the last access
        const std::size_t before = count_.fetch_sub(n); // seq_cst: the state change
        TC_CHECK(before >= n, "a Latch is counted down at most its count",
                 "Latch::CountDown below zero");
        if (before == n)
            Resume();
    }

    // CountDown(n), then Wait().
    void ArriveAndWait(std::size_t n = 1)
    {
        CountDown(n);
        Wait();
    }

    // Waitable: true once the count is zero.
    bool TryWait() const noexcept { return count_.load() == 0; }

    std::size_t Count() const noexcept { return count_.load(); }

private:
    friend class Waitable<SuspensionKind::Multiple, Latch>;
    void Resume() noexcept { SuspendableBase<SuspensionKind::Multiple>::Resume(); }
    void AfterWait() const noexcept { busy_.DrainBeforeDestroy(); }

    std::atomic<std::size_t> count_;
    detail::BusyCount busy_;
};
} // namespace TC::Synchronization
