#pragma once
// DeadlineClock: the "now" a timed wait measures its deadline from (the kernel's timers, and the
// Synchronization layer's time budgets; not an API for programs). Where the processor's counter
// is the kernel's own clock source (x86-64 Linux with an invariant time-stamp counter; AArch64
// Linux, the generic timer's virtual count), it is one unordered counter read scaled by a
// calibration the callers keep fresh between them: about 11 ns on the reference machine against
// 29 ns for a steady_clock read, and that read was a third of a timed wait there. Elsewhere, and
// until the calibration exists, it is the steady clock itself (guides/timers.md).
//
// The answer is an upper bound of steady_clock's now, so a deadline built on it is never early:
//   - the scale is the most steady nanoseconds per tick that an interval of at least 50 ms can
//     have had, plus 1/1024 (above the 500 ppm an NTP slew can change that rate);
//   - it is applied only from an anchor (a counter read bracketed by two steady reads, credited
//     with the later one) at most 10 ms old; an older one is replaced by the caller that finds
//     it so, which reads the steady clock three times for it;
//   - every replacement checks the old anchor's prediction against the steady clock, and a
//     prediction found early turns the counter off for the life of the process.
// So an answer is late by at most kDeadlineClockSlackNs (the margin over one anchor's life, the
// bracket and the reorder slack), a bound tests hold it to.

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
