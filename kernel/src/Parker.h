#pragma once
// Parker: how a sleeping thread (an idle worker, a host waiting for work, a converted thread in a
// wait) is found and woken. It names a futex word and the bit a wake sets in it.

#include "Futex.h"

#include <atomic>
#include <cstdint>

namespace TC::detail
{
// Bits of a waiting thread's futex word.
inline constexpr std::uint32_t kWordResumed = 1;  // a ResumeTask reached this thread's waiter
inline constexpr std::uint32_t kWordSleeping = 2; // the owner is (about to be) in FutexWait
inline constexpr std::uint32_t kWordWork = 4;     // a scheduler it hosts or serves has work

struct Parker
{
    std::atomic<std::uint32_t>* word = nullptr;
    Parker* next = nullptr; // sleeper list link, guarded by the scheduler's sleep lock
    bool listed = false;    // guarded by the scheduler's sleep lock

    // Sets kWordWork; wakes the owner if it sleeps. The fetch_or is the last user-space access.
    void Wake() noexcept
    {
        const std::uint32_t previous = word->fetch_or(kWordWork, std::memory_order_acq_rel);
        if (previous & kWordSleeping)
            FutexWake(word);
    }
};

// Blocks the owner of `word` until any of `wakeBits` is set, or the timeout passes; clears
// kWordSleeping and kWordWork on the way out (kWordResumed stays for the caller to read).
inline void SleepOnWord(std::atomic<std::uint32_t>& word, std::uint32_t wakeBits,
                        Duration timeout = Duration::Infinite()) noexcept
{
    std::uint32_t value = word.load(std::memory_order_acquire);
    if ((value & wakeBits) == 0
        && word.compare_exchange_strong(value, value | kWordSleeping, std::memory_order_acq_rel,
                                        std::memory_order_acquire))
    {
        FutexWait(word, value | kWordSleeping, timeout);
    }
    word.fetch_and(~(kWordSleeping | kWordWork), std::memory_order_acq_rel);
}
} // namespace TC::detail
