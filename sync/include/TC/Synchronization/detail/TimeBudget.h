#pragma once
// TimeBudget: what is left of a finite timeout across the retries of one timed wait.

#include <TC/Duration.h>
#include <TC/detail/DeadlineClock.h>

#include <chrono>
#include <cstdint>

namespace TC::Synchronization::detail
{
// Measures the time spent against the budget rather than keeping a deadline (now + timeout):
// that sum overflows for a huge finite timeout and then reads as a deadline long past.
class TimeBudget
{
public:
    explicit TimeBudget(Duration timeout) noexcept : budget_(timeout.ToChrono()) {}
    // Not positive once the budget is spent. The budget starts at the first call, which answers
    // all of it: a wait that finds its value at once reads no clock. The start is the deadline
    // clock's (an upper bound of the steady clock, TC/detail/DeadlineClock.h) and the later
    // reads the steady clock's, so the time spent is never overstated: the waits end a little
    // after the first call + timeout, never before.
    std::chrono::nanoseconds Left() noexcept
    {
        if (startNs_ == kNotStarted)
        {
            startNs_ = TC::detail::DeadlineNowNanoseconds();
            return budget_;
        }
        const std::int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count();
        return budget_ - std::chrono::nanoseconds(nowNs - startNs_);
    }

private:
    static constexpr std::int64_t kNotStarted = INT64_MIN;
    std::chrono::nanoseconds budget_;
    std::int64_t startNs_ = kNotStarted;
};
} // namespace TC::Synchronization::detail
