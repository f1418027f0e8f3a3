#pragma once
// OneWordEvent: the core of ManualResetEvent_s and ManualResetEvent -- state and waiters in
// one atomic word, so one compare-exchange publishes and checks.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>
#include <TC/Synchronization/SuspendableBase.h>
#include <TC/Synchronization/detail/EventAwaiters.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaiterWord.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization::detail
{
// The word is kUnset, kSet, or the newest waiter's entry (older ones chained through `next`).
/// - Each waiter or setter access is one RMW of the word and its last of the object: a waiter
///   may destroy the event as soon as its wait returns.
/// - A Set claims exactly the waiters suspended when it opened the event.
/// - ManyWaiters: a timed-out waiter unlinks itself under kLocked in the word; a Set claims the
///   chain whole, before or after. Else the one waiter's claim is a CAS (WaiterWord.h).
template <bool ManyWaiters = false>
class OneWordEvent : private ISuspendCallback
{
public:
    OneWordEvent(const OneWordEvent&) = delete;
    OneWordEvent& operator=(const OneWordEvent&) = delete;

    void Set() noexcept
    {
        // acq_rel: opens and claims; release to passing waiters, acquire their publications.
        // ManyWaiters: a CAS that waits out an unlinking timeout.
        std::uintptr_t word = 0;
        if constexpr (ManyWaiters)
            word = SwapUnlocked(kSet, std::memory_order_acq_rel);
        else
            word = word_.exchange(kSet, std::memory_order_acq_rel);
        if (word == kUnset || word == kSet)
            return;
        SuspendedTaskEntry* entry = EntryOf(word);
        if constexpr (ManyWaiters)
        {
            // Newest first; read the link before ResumeTask.
            while (SuspendedTaskEntry* const older = entry->next)
            {
                ResumeTask(SuspendedTask(entry));
                entry = older;
            }
        }
        ResumeTask(SuspendedTask(entry));
    }

    // Closes the event if set; a suspended waiter stays suspended.
    void Reset() noexcept
    {
        std::uintptr_t expected = kSet;
        // relaxed failure / acq_rel success: a reset publishes nothing.
        word_.compare_exchange_strong(expected, kUnset, std::memory_order_acq_rel,
                                      std::memory_order_relaxed);
    }

    bool IsSet() const noexcept { return word_.load(std::memory_order_acquire) == kSet; }
    bool IsSuspended() const noexcept
    {
        const std::uintptr_t word = word_.load(std::memory_order_acquire);
        return word != kSet && word != kUnset;
    }

    // Passes if set. Never suspends.
    bool TryWait() noexcept { return word_.load(std::memory_order_acquire) == kSet; }

    void Wait()
    {
        if (!TryWait())
            SuspendTask(this);
    }

    bool Wait(Duration timeout) { return TryWait() || SuspendTaskFor(this, timeout); }

    // The coroutine forms; the derived events say how they wake.
    using WaitAwaiter = EventWaitAwaiter<OneWordEvent>;
    using WaitForAwaiter = EventWaitForAwaiter<OneWordEvent>;
    WaitAwaiter WaitAsync() noexcept { return WaitAwaiter(*this, *this); }
    WaitForAwaiter WaitAsync(Duration timeout) noexcept
    {
        return WaitForAwaiter(*this, *this, timeout);
    }
    WaitAwaiter operator co_await() noexcept { return WaitAwaiter(*this, *this); }

protected:
    explicit OneWordEvent(bool initiallySet) noexcept : word_(initiallySet ? kSet : kUnset) {}
    // Virtual for -Wnon-virtual-dtor only.
    virtual ~OneWordEvent()
    {
#if TC_CHECKED
        // acquire: synchronizes with the last Set.
        const std::uintptr_t word = word_.load(std::memory_order_acquire);
        if (word != kSet && word != kUnset) [[unlikely]]
            ReportDestroyedWithWaiter(WaiterOf(word & ~kLocked));
#endif
    }

private:
    static constexpr std::uintptr_t kUnset = 0;
    static constexpr std::uintptr_t kSet = 1;
    // ManyWaiters: set while a timeout unlinks its entry.
    static constexpr std::uintptr_t kLocked = 2;
    static_assert(alignof(SuspendedTaskEntry) > kLocked, "entries leave the low bits free");

    // ManyWaiters: swaps in `desired` once no timeout holds the chain; returns the old word.
    std::uintptr_t SwapUnlocked(std::uintptr_t desired, std::memory_order order) noexcept
    {
        std::uintptr_t word = word_.load(std::memory_order_relaxed);
        for (unsigned spins = 0;;)
        {
            if (word & kLocked)
            {
                SpinPause(spins);
                word = word_.load(std::memory_order_relaxed);
            }
            else if (word_.compare_exchange_weak(word, desired, order, std::memory_order_relaxed))
            {
                return word;
            }
        }
    }

    // ManyWaiters: OnTimeout's claim; unlinks `task`, or false if a Set claimed it first.
    bool UnlinkForTimeout(SuspendedTask task) noexcept
    {
        std::uintptr_t word = word_.load(std::memory_order_relaxed);
        for (unsigned spins = 0;;)
        {
            if (word == kUnset || word == kSet)
                return false;
            if (word & kLocked)
            {
                SpinPause(spins);
                word = word_.load(std::memory_order_relaxed);
                continue;
            }
            // acquire: the chain's links.
            if (word_.compare_exchange_weak(word, word | kLocked, std::memory_order_acquire,
                                            std::memory_order_relaxed))
                break;
        }
        // Only we change the word or this chain until the store below.
        SuspendedTaskEntry* const mine = task.Entry();
        SuspendedTaskEntry* previous = nullptr;
        SuspendedTaskEntry* entry = EntryOf(word);
        while (entry != nullptr && entry != mine)
        {
            previous = entry;
            entry = entry->next;
        }
        std::uintptr_t after = word;
        if (entry != nullptr) // found: entry is ours
        {
            SuspendedTaskEntry* const older = entry->next;
            if (previous == nullptr)
                after = older != nullptr ? reinterpret_cast<std::uintptr_t>(older) : kUnset;
            else
                previous->next = older;
        }
        // release: the edited links, for the next claiming Set.
        word_.store(after, std::memory_order_release);
        return entry != nullptr;
    }

    void OnSuspended(SuspendedTask task) noexcept override
    {
        const std::uintptr_t self = WordOf(task);
        // acquire: seeing kSet here ends the wait, so it must see the setter's writes.
        std::uintptr_t word = word_.load(std::memory_order_acquire);
        for (unsigned spins = 0;;)
        {
            if (word == kSet)
            {
                ResumeTask(task); // never published: ours to resume
                return;
            }
            if constexpr (ManyWaiters)
            {
                if (word & kLocked) // a timeout is unlinking: wait
                {
                    SpinPause(spins);
                    word = word_.load(std::memory_order_acquire);
                    continue;
                }
                task.Entry()->next = word == kUnset ? nullptr : EntryOf(word);
            }
            else
                TC_CHECK(word == kUnset, "one waiter at a time on a _s event",
                         "a second waiter suspended on a ManualResetEvent_s");
            // release: publishes the waiter and link; acquire on failure.
            if (word_.compare_exchange_weak(word, self, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return; // last access: the setter owns the waiter
        }
    }

    bool OnTimeout(SuspendedTask task) noexcept override
    {
        if constexpr (ManyWaiters)
        {
            return UnlinkForTimeout(task); // against a Set's claim of the chain
        }
        else
        {
            return ClaimForTimeout(word_, task, kUnset); // against a Set's claim
        }
    }

    std::atomic<std::uintptr_t> word_;
};
} // namespace TC::Synchronization::detail
