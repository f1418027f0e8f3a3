#pragma once
// DeadlineClock: the "now" of timed waits (internal): a scaled counter where it is the kernel's
// clock source, else steady_clock.

#include <TC/detail/Export.h>

#include <cstdint>

namespace TC::detail
{
// Never below a steady_clock read before the call, nor kDeadlineClockSlackNs above one after.
TC_API std::int64_t DeadlineNowNanoseconds() noexcept;

inline constexpr std::int64_t kDeadlineClockSlackNs = 25'000;

// Whether answers come from the counter now.
TC_API bool DeadlineClockUsesCounter() noexcept;
} // namespace TC::detail
