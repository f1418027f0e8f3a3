#pragma once
// TimeBudget: what is left of a finite timeout across the retries of one timed wait.

#include <TC/Duration.h>
#include <TC/detail/DeadlineClock.h>

#include <chrono>
#include <cstdint>

namespace TC::Synchronization::detail
{
// Measures time spent rather than a deadline (now + timeout overflows for huge timeouts).
class TimeBudget
{
public:
    explicit TimeBudget(Duration timeout) noexcept : budget_(timeout.ToChrono()) {}
    // Not positive once spent. Starts at the first call, which answers all of it (no clock read);
    // starts on the deadline clock, later reads the steady clock: waits never end early.
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
