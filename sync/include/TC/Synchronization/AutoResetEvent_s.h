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
/// - One waiter at a time (checked mode fails a second; TryWait/Wait from two threads breaks it);
///   use AutoResetEvent for several. Set and Reset: any thread, any number of times.
/// - A passing Wait is a load and a plain store; a Set is one RMW (guides/single-waiter.md).
/// - Destroy it by the waiter as soon as its Wait returned, or by anyone once no waiter is
///   suspended and no Set runs.
class AutoResetEvent_s : private ISuspendCallback
{
public:
    explicit AutoResetEvent_s(bool initiallySet = false) noexcept
        : word_(initiallySet ? kOneSet : 0), consumed_(ConsumedTag(0))
    {
    }
    AutoResetEvent_s(const AutoResetEvent_s&) = delete;
    AutoResetEvent_s& operator=(const AutoResetEvent_s&) = delete;

    // Virtual only because of virtual members (-Wnon-virtual-dtor); never deleted through a base.
    virtual ~AutoResetEvent_s()
    {
#if TC_CHECKED
        // acquire, as IsSuspended: the destroying thread synchronizes with the last Set.
        if (word_.load(std::memory_order_acquire) & kWaiter) [[unlikely]]
            detail::ReportDestroyedWithWaiter(SuspendedWaiter());
#endif
    }

    // Resumes the suspended waiter, or lets the next Wait pass. Any thread, also a callback;
    // never blocks.
    void Set() noexcept
    {
        std::uint64_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        std::uint64_t desired;
        do
        {
            // Claims a published waiter (count left alone), else counts a Set; supersedes any
            // earlier Reset.
            desired = (word & kWaiter) ? word & ~(kWaiter | kReset) : (word & ~kReset) + kOneSet;
            // acq_rel: release publishes our caller's writes to the waiter (so even a set event
            // gets the write); acquire reads the waiter's entry.
        } while (!word_.compare_exchange_weak(word, desired, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
        if (word & kWaiter)
        {
            // Claimed: the waiter stays suspended until ResumeTask; its consumed count stands.
            const SuspendedTask waiter = SuspendedWaiter();
            consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
            ResumeTask(waiter);
        }
    }

    // Clears the event if set; a suspended waiter stays suspended. Any thread.
    void Reset() noexcept
    {
        // relaxed: a Reset publishes nothing; the next Set's RMW on this word comes after it.
        word_.fetch_or(kReset, std::memory_order_relaxed);
    }

    // Snapshots: true if the event was set / a waiter was suspended at the moment of the loads.
    bool IsSet() const noexcept
    {
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        // An even consumed_ is a waiter's entry, stored just before it publishes: not set.
        const std::uint64_t consumed = consumed_.load(std::memory_order_relaxed);
        return IsPending(word, consumed) && (consumed & 1);
    }
    bool IsSuspended() const noexcept
    {
        return (word_.load(std::memory_order_acquire) & kWaiter) != 0;
    }

    // Passes if set, clearing it, without suspending; true if it passed. The waiter only.
    bool TryWait() noexcept
    {
            // acquire: the Set that wrote this count (and, through the RMW chain, earlier Sets).
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        TC_CHECK(!(word & kWaiter), "one waiter at a time on a _s event",
                 "a second waiter on an AutoResetEvent_s while one is suspended");
        if (!IsPending(word, consumed_.load(std::memory_order_relaxed)))
            return false;
        consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
        return true;
    }

    // Returns at once if set; otherwise suspends until Set. From a task or a converted thread.
    void Wait()
    {
        if (!TryWait())
            SuspendTask(this);
    }

    // The same, but false if no Set came within the timeout (unlimited without EnableTimers). A
    // Set racing the deadline either ends the wait true or leaves the event set: none is lost.
    bool Wait(Duration timeout)
    {
        return TryWait() || SuspendTaskFor(this, timeout);
    }

    // co_await ev, ev.WaitAsync(), ev.WaitAsync(timeout) (false on timeout): coroutine forms,
    // continuing on the executor current at the suspension.
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
    // word_: bit 0 a published waiter, bit 1 a Reset since the last Set, bits 2-63 the count of
    // Sets that found no waiter (2^62 of them: 146 years at one per nanosecond).
    static constexpr std::uint64_t kWaiter = 1;
    static constexpr std::uint64_t kReset = 2;
    static constexpr std::uint64_t kOneSet = 4;

    // consumed_ holds a count as 2 * count + 1, so that it is never an entry's (even) address.
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
        // Ours while no waiter is published: the waiter's last consume.
        const std::uint64_t consumed = consumed_.load(std::memory_order_relaxed);
        // acquire: a Set's count we pass on carries its caller's writes (as in TryWait).
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
            // The entry replaces the consumed count; a claiming Set puts it back.
            consumed_.store(detail::WordOf(task), std::memory_order_relaxed);
            // release: publishes the entry; acquire on failure: a Set's count, as above.
            if (word_.compare_exchange_weak(word, word | kWaiter, std::memory_order_release,
                                            std::memory_order_acquire))
                return; // the last access: from here on a Set or the timeout owns the waiter
        }
    }

    bool OnTimeout(SuspendedTask) noexcept override
    {
        std::uint64_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        while (word & kWaiter)
        {
            // acq_rel: claims the waiter against a Set doing the same.
            if (word_.compare_exchange_weak(word, word & ~kWaiter, std::memory_order_acq_rel,
                                            std::memory_order_relaxed))
            {
                consumed_.store(ConsumedTag(word), std::memory_order_relaxed);
                return true; // the kernel resumes the waiter: it timed out
            }
        }
        return false; // a Set claimed it and resumes it
    }

    std::atomic<std::uint64_t> word_;
    // Written by the waiter, and by whoever claimed it while it was published.
    std::atomic<std::uint64_t> consumed_;

    static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
};
} // namespace TC::Synchronization
