#pragma once
// TimeBudget: what is left of a finite timeout across the retries of one timed wait.

#include <TC/Duration.h>

#include <chrono>

namespace TC::Synchronization::detail
{
// Measures the time spent against the budget rather than keeping a deadline (now + timeout):
// that sum overflows for a huge finite timeout and then reads as a deadline long past.
class TimeBudget
{
public:
    explicit TimeBudget(Duration timeout) noexcept
        : budget_(timeout.ToChrono()), start_(std::chrono::steady_clock::now())
    {
    }
    // Not positive once the budget is spent. The first call answers the whole budget without
    // reading the clock (a read costs 20-30 ns on some machines, as much as the rest of a timed
    // wait): the wait it feeds then ends a little after start + timeout, never before.
    std::chrono::nanoseconds Left() noexcept
    {
        if (first_)
        {
            first_ = false;
            return budget_;
        }
        return budget_ - (std::chrono::steady_clock::now() - start_);
    }

private:
    std::chrono::nanoseconds budget_;
    std::chrono::steady_clock::time_point start_;
    bool first_ = true;
};
} // namespace TC::Synchronization::detail
