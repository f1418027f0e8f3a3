#pragma once
// Futex wait/wake on a 32-bit atomic word. The wake is a system call that only names an address,
// so it is harmless when the waiter already returned and its word is gone: that is why a resumer
// may wake after its last user-space access to a waiter's word.

#include <TC/Duration.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace TC::detail
{
// Sleeps while *word == expected, at most `timeout`; returns on a wake, a timeout or spuriously.
inline void FutexWait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                      Duration timeout = Duration::Infinite()) noexcept
{
    timespec relative{};
    timespec* limit = nullptr;
    if (!timeout.IsInfinite())
    {
        relative.tv_sec = static_cast<time_t>(timeout.Nanoseconds() / 1000000000);
        relative.tv_nsec = static_cast<long>(timeout.Nanoseconds() % 1000000000);
        limit = &relative;
    }
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, limit,
            nullptr, 0);
}

inline void FutexWake(std::atomic<std::uint32_t>* word, int count = 1) noexcept
{
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
            nullptr, 0);
}
} // namespace TC::detail
