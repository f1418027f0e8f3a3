#pragma once
// NowNs: the steady clock in nanoseconds -- the clock the kernel's deadlines and RunFor budgets
// are kept on -- for tests that compare their own timestamps with them.

#include <chrono>
#include <cstdint>

namespace TCSupport
{
inline std::int64_t NowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace TCSupport
