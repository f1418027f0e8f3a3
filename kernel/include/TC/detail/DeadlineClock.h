#pragma once
// DeadlineClock: the "now" a timed wait measures its deadline from (kernel timers, time budgets;
// not an API for programs): a scaled counter read where the counter is the kernel's clock source,
// else steady_clock. An upper bound of steady_clock's now, late by at most kDeadlineClockSlackNs
// (design: guides/design-notes.md).

#include <TC/detail/Export.h>

#include <cstdint>

namespace TC::detail
{
// Never below a steady_clock read that happened before the call; never more than
// kDeadlineClockSlackNs above one made right after it.
TC_API std::int64_t DeadlineNowNanoseconds() noexcept;

inline constexpr std::int64_t kDeadlineClockSlackNs = 25'000;

// Whether answers come from the counter now (a calibration exists and nothing turned it off).
TC_API bool DeadlineClockUsesCounter() noexcept;
} // namespace TC::detail
