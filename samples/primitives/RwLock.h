#pragma once
// RwLock: a writer-preferring reader-writer lock for tasks, threads and coroutines, with timed
// Lock and LockShared. A sample primitive built on WaitQueue
// (guides/many-waiters-with-timeouts.md).

#include <TC/WaitForResult.h>

#include <atomic>
#include <cstdint>

namespace Samples
{
// [guide:rw-lock]
// One word: bit 31 a writer holds it, bits 16-30 writers waiting, bits 0-15 readers holding it.
// A waiting writer keeps new readers out (writer preference: readers may starve, writers not).
// Every release that can let someone in resumes, after its read-modify-write, the ones it can.
class RwLock
{
public:
    bool TryLock() noexcept { return TakeExclusive(0); }

    // Waits while anyone holds it; false if `timeout` passed first.
    bool Lock(TC::Duration timeout = TC::Duration::Infinite())
    {
        if (TryLock())
            return true;
        state_.fetch_add(kWaitingWriter); // from here readers wait for us
        const bool locked = static_cast<bool>(TC::WaitForResult(
            writers_, [this]() noexcept { return TakeExclusive(kWaitingWriter); }, timeout));
        if (!locked)
            LeaveWaiting();
        return locked;
    }

    TC::Strands::Task<bool> LockAsync(TC::Duration timeout = TC::Duration::Infinite())
    {
        if (TryLock())
            co_return true;
        state_.fetch_add(kWaitingWriter);
        const bool locked = static_cast<bool>(co_await TC::WaitForResultAsync(
            writers_, [this]() noexcept { return TakeExclusive(kWaitingWriter); }, timeout));
        if (!locked)
            LeaveWaiting();
        co_return locked;
    }

    void Unlock() noexcept
    {
        // release: what the writer wrote, for whoever takes the lock next.
        Released(state_.fetch_sub(kWriter, std::memory_order_release) - kWriter);
    }

    bool TryLockShared() noexcept
    {
        std::uint32_t s = state_.load(std::memory_order_relaxed); // the CAS decides
        while (!(s & (kWriter | kWaitingMask)))
            // acquire: what the last writer wrote before its Unlock.
            if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire))
                return true;
        return false;
    }

    // Waits while a writer holds it or waits for it; false if `timeout` passed first.
    bool LockShared(TC::Duration timeout = TC::Duration::Infinite())
    {
        return static_cast<bool>(TC::WaitForResult(
            readers_, [this]() noexcept { return TryLockShared(); }, timeout));
    }

    TC::Strands::Task<bool> LockSharedAsync(TC::Duration timeout = TC::Duration::Infinite())
    {
        co_return static_cast<bool>(co_await TC::WaitForResultAsync(
            readers_, [this]() noexcept { return TryLockShared(); }, timeout));
    }

    void UnlockShared() noexcept
    {
        const std::uint32_t s = state_.fetch_sub(1, std::memory_order_release) - 1;
        if ((s & kReaders) == 0)
            Released(s);
    }

private:
    static constexpr std::uint32_t kWriter = 1u << 31;
    static constexpr std::uint32_t kWaitingWriter = 1u << 16;
    static constexpr std::uint32_t kWaitingMask = 0x7fffu << 16;
    static constexpr std::uint32_t kReaders = 0xffffu;

    // Takes the lock when nobody holds it; `waiting` is the announcement a waiting writer drops.
    bool TakeExclusive(std::uint32_t waiting) noexcept
    {
        std::uint32_t s = state_.load(std::memory_order_relaxed); // the CAS decides
        while (!(s & (kWriter | kReaders)))
            // acquire: what the last holder wrote before its release.
            if (state_.compare_exchange_weak(s, (s - waiting) | kWriter, std::memory_order_acquire))
                return true;
        return false;
    }

    // The lock is free of `s`'s holder: one waiting writer goes first, else every reader.
    void Released(std::uint32_t s) noexcept
    {
        if (s & kWaitingMask)
            writers_.ResumeOne();
        else if (!(s & kWriter))
            readers_.ResumeAll();
    }

    // A writer gave up waiting: if it was the last one, the readers it held back may enter.
    void LeaveWaiting() noexcept
    {
        const std::uint32_t s = state_.fetch_sub(kWaitingWriter) - kWaitingWriter;
        if (!(s & (kWaitingMask | kWriter)))
            readers_.ResumeAll();
    }

    std::atomic<std::uint32_t> state_{0};
    TC::WaitQueue writers_{"RwLock: writers"};
    TC::WaitQueue readers_{"RwLock: readers"};
};
// [/guide:rw-lock]
} // namespace Samples
