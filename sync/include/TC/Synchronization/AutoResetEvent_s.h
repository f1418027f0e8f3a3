#pragma once
// AutoResetEvent_s: a signal that lets one waiter pass per Set, for exactly one waiter at a time.
//   TC::Synchronization::AutoResetEvent_s ready;
//   ready.Set();  /* the waiter: */  ready.Wait();

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>
#include <TC/Synchronization/SuspendableBase.h>
#include <TC/Synchronization/detail/EventAwaiters.h>
#include <TC/Synchronization/detail/WaiterWord.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization
{
// Set resumes the waiter or leaves the event signaled for the next Wait, which clears it; Sets
// do not accumulate.
/// - One waiter at a time (checked mode fails a second); AutoResetEvent for several. Set and
///   Reset: any thread, any number of times.
/// - A passing Wait is a load and a plain store; a Set is one RMW (guides/single-waiter.md).
/// - Destruction: by the waiter once its Wait returned, or once no waiter is suspended and no
///   Set runs.
class AutoResetEvent_s : private ISuspendCallback
{
public:
    explicit AutoResetEvent_s(bool initiallySet = false) noexcept
        : word_(initiallySet ? kOneSet : 0), consumed_(ConsumedTag(0))
    {
    }
    AutoResetEvent_s(const AutoResetEvent_s&) = delete;
    AutoResetEvent_s& operator=(const AutoResetEvent_s&) = delete;

    // Virtual for -Wnon-virtual-dtor only.
    virtual ~AutoResetEvent_s()
    {
#if TC_CHECKED
        // acquire: synchronizes with the last Set.
        if (word_.load(std::memory_order_acquire) & kWaiter) [[unlikely]]
            detail::ReportDestroyedWithWaiter(SuspendedWaiter());
#endif
    }

    // Resumes the waiter, or lets the next Wait pass. Any thread or callback; never blocks.
    void Set() noexcept
    {
        std::uint64_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        std::uint64_t desired;
        do
        {
            // Claims a published waiter, else counts a Set; clears any Reset.
            desired = (word & kWaiter) ? word & ~(kWaiter | kReset) : (word & ~kReset) + kOneSet;
            // acq_rel: see design notes.
        } while (!word_.compare_exchange_weak(word, desired, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
        if (word & kWaiter)
        {
            // Claimed: restore its consumed count, then resume.
            const SuspendedTask waiter = SuspendedWaiter();
            consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
            ResumeTask(waiter);
        }
    }

    // Clears it; a suspended waiter stays suspended. Any thread.
    void Reset() noexcept
    {
        // relaxed: a Reset publishes nothing.
        word_.fetch_or(kReset, std::memory_order_relaxed);
    }

    // Snapshots: set / a waiter is suspended.
    bool IsSet() const noexcept
    {
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        // An even consumed_ is a waiter's entry: not set.
        const std::uint64_t consumed = consumed_.load(std::memory_order_relaxed);
        return IsPending(word, consumed) && (consumed & 1);
    }
    bool IsSuspended() const noexcept
    {
        return (word_.load(std::memory_order_acquire) & kWaiter) != 0;
    }

    // Takes the signal if set; never suspends. The waiter only.
    bool TryWait() noexcept
    {
            // acquire: the Sets that wrote this count.
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        TC_CHECK(!(word & kWaiter), "one waiter at a time on a _s event",
                 "a second waiter on an AutoResetEvent_s while one is suspended");
        if (!IsPending(word, consumed_.load(std::memory_order_relaxed)))
            return false;
        consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
        return true;
    }

    // Passes if set, else suspends until Set. Task or converted thread.
    void Wait()
    {
        if (!TryWait())
            SuspendTask(this);
    }

    // As Wait; false on timeout (no limit without EnableTimers). A Set racing it is never lost.
    bool Wait(Duration timeout)
    {
        return TryWait() || SuspendTaskFor(this, timeout);
    }

    // co_await forms (timed: false on timeout); resume on the executor current at suspension.
    using WaitAwaiter = detail::EventWaitAwaiter<AutoResetEvent_s>;
    using WaitForAwaiter = detail::EventWaitForAwaiter<AutoResetEvent_s>;
    WaitAwaiter WaitAsync() noexcept
    {
        return WaitAwaiter(*this, *this);
    }
    WaitForAwaiter WaitAsync(Duration timeout) noexcept
    {
        return WaitForAwaiter(*this, *this, timeout);
    }
    WaitAwaiter operator co_await() noexcept
    {
        return WaitAwaiter(*this, *this);
    }

private:
    // word_: bit 0 waiter, bit 1 Reset since the last Set, bits 2-63 count of unclaimed Sets.
    static constexpr std::uint64_t kWaiter = 1;
    static constexpr std::uint64_t kReset = 2;
    static constexpr std::uint64_t kOneSet = 4;

    // consumed_: 2 * count + 1, never an entry's (even) address.
    static constexpr std::uint64_t ConsumedTag(std::uint64_t word) noexcept
    {
        return (word >> 1) | 1;
    }
    static bool IsPending(std::uint64_t word, std::uint64_t consumed) noexcept
    {
        return !(word & (kWaiter | kReset)) && ConsumedTag(word) != consumed;
    }
    SuspendedTask SuspendedWaiter() const noexcept
    {
        return SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(
            static_cast<std::uintptr_t>(consumed_.load(std::memory_order_relaxed))));
    }

    void OnSuspended(SuspendedTask task) noexcept override
    {
        // Ours while unpublished.
        const std::uint64_t consumed = consumed_.load(std::memory_order_relaxed);
        // acquire, as in TryWait.
        std::uint64_t word = word_.load(std::memory_order_acquire);
        for (;;)
        {
            if (IsPending(word, consumed))
            {
                consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
                ResumeTask(task); // never published: ours to resume
                return;
            }
            TC_CHECK(!(word & kWaiter), "one waiter at a time on a _s event",
                     "a second waiter suspended on an AutoResetEvent_s");
            // The entry replaces the count; a claiming Set restores it.
            consumed_.store(detail::WordOf(task), std::memory_order_relaxed);
            // release: publishes the entry; acquire on failure, as above.
            if (word_.compare_exchange_weak(word, word | kWaiter, std::memory_order_release,
                                            std::memory_order_acquire))
                return; // last access: a Set or the timeout owns the waiter
        }
    }

    bool OnTimeout(SuspendedTask) noexcept override
    {
        std::uint64_t word = word_.load(std::memory_order_relaxed);
        while (word & kWaiter)
        {
            // acq_rel: races a Set's claim.
            if (word_.compare_exchange_weak(word, word & ~kWaiter, std::memory_order_acq_rel,
                                            std::memory_order_relaxed))
            {
                consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
                return true; // timed out
            }
        }
        return false; // a Set claimed it and resumes it
    }

    std::atomic<std::uint64_t> word_;
    // Written by the waiter, or by whoever claimed it.
    std::atomic<std::uint64_t> consumed_;

    static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
};
} // namespace TC::Synchronization
