#pragma once
// WaitForResult, co_await WaitForResultAsync: a primitive's wait written once as a non-blocking
// attempt, for tasks, threads and coroutines.
//
//     std::optional<int> TryPop() noexcept;              // non-blocking
//     WaitResult<int> r = WaitForResult(notEmpty_, [&]() noexcept { return TryPop(); }, 5ms);
//     WaitResult<int> c = co_await WaitForResultAsync(notEmpty_, [&]() noexcept { return TryPop(); });

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Strands/Cancellation.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/Task.h>
#include <TC/Synchronization/WaitQueue.h>

#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

namespace TC
{
using Synchronization::WaitQueue;
using Synchronization::WaitStatus;

// A wait's value (or success), or why not: TimedOut or Cancelled.
template <class T>
class WaitResult
{
public:
    explicit WaitResult(T value) noexcept(std::is_nothrow_move_constructible_v<T>)
        : value_(std::move(value))
    {
    }
    explicit WaitResult(WaitStatus failure) noexcept : failure_(failure) {}

    bool HasValue() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return HasValue(); }
    // Requires HasValue() (checked: "a WaitResult read without a value").
    T& operator*() noexcept { return CheckedValue(); }
    T* operator->() noexcept { return &CheckedValue(); }
    // TimedOut or Cancelled; Resumed when there is a value.
    WaitStatus Status() const noexcept { return failure_; }

private:
    T& CheckedValue() noexcept
    {
        TC_CHECK(value_.has_value(), "a WaitResult read without a value",
                 "operator* or -> on a WaitResult that timed out or was cancelled");
        return *value_;
    }
    std::optional<T> value_;
    WaitStatus failure_ = WaitStatus::Resumed;
};

template <>
class WaitResult<void>
{
public:
    WaitResult() noexcept = default;
    explicit WaitResult(WaitStatus failure) noexcept : failure_(failure), done_(false) {}
    bool HasValue() const noexcept { return done_; }
    explicit operator bool() const noexcept { return done_; }
    WaitStatus Status() const noexcept { return failure_; }

private:
    WaitStatus failure_ = WaitStatus::Resumed;
    bool done_ = true;
};

namespace detail
{
template <class Returned>
struct AttemptValue
{
    using Type = typename Returned::value_type;
};
template <>
struct AttemptValue<bool>
{
    using Type = void;
};

// An attempt returns std::optional<T> or bool (no value).
template <class Attempt>
struct AttemptTraits
{
    using Returned = std::invoke_result_t<Attempt&>;
    static_assert(std::is_nothrow_invocable_v<Attempt&>,
                  "WaitForResult: the attempt must be a noexcept callable returning "
                  "std::optional<T> or bool");
    static constexpr bool kHasValue = !std::is_same_v<Returned, bool>;
    using Value = typename AttemptValue<Returned>::Type;
    // Where a hand-off leaves the value (or its being done).
    using Slot = std::conditional_t<kHasValue, Returned, std::optional<bool>>;

    static bool TryInto(Attempt& attempt, Slot& slot) noexcept
    {
        if constexpr (kHasValue)
            slot = attempt();
        else if (attempt())
            slot.emplace(true);
        return slot.has_value();
    }
    static WaitResult<Value> Done(Slot& slot) noexcept
    {
        if constexpr (kHasValue)
            return WaitResult<Value>(std::move(*slot));
        else
            return WaitResult<Value>();
    }
};

// A deadline's rest; Infinite stays infinite.
class Deadline
{
public:
    explicit Deadline(Duration timeout) noexcept
        : infinite_(timeout.IsInfinite()),
          at_(infinite_ ? Clock::time_point::max() : Clock::now() + timeout.ToChrono())
    {
    }
    Duration Left() const noexcept
    {
        if (infinite_)
            return Duration::Infinite();
        const auto left = at_ - Clock::now();
        return left.count() > 0 ? Duration(left) : Duration::Zero();
    }

private:
    using Clock = std::chrono::steady_clock;
    bool infinite_;
    Clock::time_point at_;
};
} // namespace detail

// Runs `attempt` until it succeeds, waiting on `queue` between tries; it is each wait's
// re-check (no lost wake-up). No spin.
/// - Gives up after `timeout` in all (unlimited without EnableTimers) or when `stop` is stopped.
/// - A resumer may complete the operation for the oldest waiter with HandOffResult.
/// - From a task or a thread; a coroutine uses WaitForResultAsync.
/// - `attempt`: noexcept, short, never waits or calls `queue` (runs under its lock).
template <class Attempt>
WaitResult<typename detail::AttemptTraits<Attempt>::Value>
WaitForResult(WaitQueue& queue, Attempt attempt, Duration timeout = Duration::Infinite(),
              const Strands::StopToken& stop = {})
{
    using Traits = detail::AttemptTraits<Attempt>;
    typename Traits::Slot slot;
    const detail::Deadline deadline(timeout);
    auto mustWait = [&]() noexcept { return !Traits::TryInto(attempt, slot); };
    if (Traits::TryInto(attempt, slot))
        return Traits::Done(slot);
    for (;;)
    {
        // A resume that finds nothing waits again.
        const WaitStatus status = queue.Wait(mustWait, deadline.Left(), stop, &slot);
        if (status == WaitStatus::TimedOut || status == WaitStatus::Cancelled)
            return WaitResult<typename Traits::Value>(status);
        // Handed off, or the re-check did it; else a resume means "look again", which needs no
        // wait when the attempt now succeeds.
        if (slot.has_value() || Traits::TryInto(attempt, slot))
            return Traits::Done(slot);
    }
}

// WaitForResult for coroutines; without `stop` it observes the awaiting Task's token. Resumes on
// the executor current at suspension. Stores the attempt in the Task's frame.
template <class Attempt>
Strands::Task<WaitResult<typename detail::AttemptTraits<Attempt>::Value>>
WaitForResultAsync(WaitQueue& queue, Attempt attempt, Duration timeout = Duration::Infinite(),
                   Strands::StopToken stop = {})
{
    using Traits = detail::AttemptTraits<Attempt>;
    if (!stop.stop_possible())
        stop = co_await Strands::ThisCoroStopToken();
    typename Traits::Slot slot;
    const detail::Deadline deadline(timeout);
    auto mustWait = [&]() noexcept { return !Traits::TryInto(attempt, slot); };
    if (Traits::TryInto(attempt, slot))
        co_return Traits::Done(slot);
    for (;;)
    {
        const WaitStatus status = co_await queue.WaitAsync(mustWait, deadline.Left(), stop, &slot);
        if (status == WaitStatus::TimedOut || status == WaitStatus::Cancelled)
            co_return WaitResult<typename Traits::Value>(status);
        if (slot.has_value() || Traits::TryInto(attempt, slot))
            co_return Traits::Done(slot);
    }
}

// Gives `value` to the oldest waiter (attempt yields std::optional<T>), moved only if one
// waited. Every waiter of `queue` must use WaitForResult(Async) with that T.
template <class T>
bool HandOffResult(WaitQueue& queue, T& value) noexcept
{
    static_assert(std::is_nothrow_move_constructible_v<T>,
                  "HandOffResult: T's move must not throw (it runs after the waiter was taken)");
    return queue.HandOff([&value](void* slot) noexcept
                         { static_cast<std::optional<T>*>(slot)->emplace(std::move(value)); });
}

// For a bool attempt: the resumer did the operation for the oldest waiter (a lock handed
// over, a permit given); false if nobody waited.
inline bool HandOffDone(WaitQueue& queue) noexcept
{
    return queue.HandOff([](void* slot) noexcept
                         { static_cast<std::optional<bool>*>(slot)->emplace(true); });
}
} // namespace TC
