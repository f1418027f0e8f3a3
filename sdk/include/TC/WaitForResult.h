#pragma once
// WaitForResult and co_await WaitForResultAsync: a primitive's waiting operation written once
// as a non-blocking attempt, usable from tasks, threads and coroutines with no awaiter to write.
//
//     std::optional<int> TryPop() noexcept;              // the primitive's non-blocking attempt
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

// What a waiting operation gave: its value (for an operation with none, just success), or why
// not -- WaitStatus::TimedOut or WaitStatus::Cancelled.
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
    // Requires HasValue() (checked mode fails "a WaitResult read without a value").
    T& operator*() noexcept { return CheckedValue(); }
    T* operator->() noexcept { return &CheckedValue(); }
    // Why there is no value: TimedOut or Cancelled (Resumed when there is one).
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

// An attempt returns std::optional<T> (T: the operation's value) or bool (no value).
template <class Attempt>
struct AttemptTraits
{
    using Returned = std::invoke_result_t<Attempt&>;
    static_assert(std::is_nothrow_invocable_v<Attempt&>,
                  "WaitForResult: the attempt must be a noexcept callable returning "
                  "std::optional<T> or bool");
    static constexpr bool kHasValue = !std::is_same_v<Returned, bool>;
    using Value = typename AttemptValue<Returned>::Type;
    // Where a hand-off leaves the operation's value (or its being done): the wait's context.
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

// What is left of a deadline; Infinite stays infinite.
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

// Runs `attempt` until it succeeds, waiting on `queue` between tries; the re-check of each wait
// is the attempt itself (under the queue's rule), so a wake-up is never lost. It does not spin
// before waiting: a converted thread's wait spins briefly in the kernel already. Gives up after
// `timeout` in all (unlimited without EnableTimers) or when `stop` is stopped. A resumer may
// also complete the operation for the oldest waiter with HandOffResult. From a task or a
// converted thread; a coroutine uses WaitForResultAsync. `attempt` is noexcept, short, never
// waits and never calls into `queue` (it runs under the queue's lock at publication).
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
        // Each wait's re-check is the attempt: a resume that finds nothing waits again.
        const WaitStatus status = queue.Wait(mustWait, deadline.Left(), stop, &slot);
        if (status == WaitStatus::TimedOut || status == WaitStatus::Cancelled)
            return WaitResult<typename Traits::Value>(status);
        if (slot.has_value())
            return Traits::Done(slot); // handed off, or the re-check did it
    }
}

// co_await WaitForResultAsync(queue, attempt, ...): the coroutine form of WaitForResult. With no
// `stop` given it observes the awaiting Task's token. Resumes on the executor that was current
// when it suspended. The attempt is stored in the returned Task's frame.
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
        if (slot.has_value())
            co_return Traits::Done(slot);
    }
}

// The resumer's side of a hand-off: gives `value` to the oldest waiter of a WaitForResult whose
// attempt yields std::optional<T>, moving it only if one was queued. Every waiter of `queue`
// must wait through WaitForResult(Async) with that same T.
template <class T>
bool HandOffResult(WaitQueue& queue, T& value) noexcept
{
    static_assert(std::is_nothrow_move_constructible_v<T>,
                  "HandOffResult: T's move must not throw (it runs after the waiter was taken)");
    return queue.HandOff([&value](void* slot) noexcept
                         { static_cast<std::optional<T>*>(slot)->emplace(std::move(value)); });
}

// For an attempt that returns bool: the resumer did the operation on the oldest waiter's behalf
// (a lock handed over, a permit given); false if nobody waited.
inline bool HandOffDone(WaitQueue& queue) noexcept
{
    return queue.HandOff([](void* slot) noexcept
                         { static_cast<std::optional<bool>*>(slot)->emplace(true); });
}
} // namespace TC
