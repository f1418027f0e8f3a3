#pragma once
// OneWordEvent: the shared core of ManualResetEvent_s and ManualResetEvent -- state and waiters
// in one atomic word, so one compare-exchange publishes and checks at once.

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
// The word is kUnset, kSet, or the address of the newest suspended waiter's SuspendedTaskEntry
// (entries are pointer-aligned, so neither constant is a valid address); with ManyWaiters the
// older waiters hang off that entry through its `next` link, oldest last. Every access by a
// waiter or setter is one access of the word (an RMW; a waiter's look before it may be a load)
// and the last of the object: nothing of the event is touched after the RMW that
// publishes the waiter or claims the waiters. That is what lets a waiter destroy the event as
// soon as its wait returns. It also makes a manual-reset Set claim exactly the waiters suspended
// when it opened the event: one exchange does both, so a waiter that suspends after a later Reset
// is never resumed by an earlier Set (a Set that stored its state and then looked for waiters
// could wake such a waiter, which then returned from Wait while the event was closed).
//
// Timed waits: with ManyWaiters a timed-out waiter unlinks its entry from the chain. It sets
// kLocked in the word (only while the word holds waiters), walks the chain and stores the word
// back without its entry; Set and publishing waiters spin while kLocked is set, so a chain is
// edited by one thread at a time and a Set claims it whole, before or after the unlink. Without
// ManyWaiters the one waiter's claim is a compare-exchange (WaiterWord.h).
template <bool ManyWaiters = false>
class OneWordEvent : private ISuspendCallback
{
public:
    OneWordEvent(const OneWordEvent&) = delete;
    OneWordEvent& operator=(const OneWordEvent&) = delete;

    void Set() noexcept
    {
        // acq_rel: an exchange both opens the event and claims the waiters; release publishes
        // our caller's writes to every waiter that passes, acquire reads the waiters'
        // publications. Its acquire also covers the older waiters' links: each publication is
        // an RMW, so the publications form one release sequence that this exchange reads the
        // end of. ManyWaiters: the same as a compare-exchange that waits out an unlinking
        // timeout (whose release store the chain it leaves comes with).
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
            // Newest first. The link is ours until ResumeTask: read it before.
            while (SuspendedTaskEntry* const older = entry->next)
            {
                ResumeTask(SuspendedTask(entry));
                entry = older;
            }
        }
        ResumeTask(SuspendedTask(entry));
    }

    // Closes the event if it is set; a suspended waiter stays suspended.
    void Reset() noexcept
    {
        std::uintptr_t expected = kSet;
        // relaxed failure / acq_rel success: resetting publishes nothing a waiter reads.
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

    // The coroutine forms; the derived events' headers say how they wake.
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
    // Virtual only because of virtual members (-Wnon-virtual-dtor); never deleted through a base.
    virtual ~OneWordEvent()
    {
#if TC_CHECKED
        // acquire, as IsSuspended: the destroying thread synchronizes with the last Set.
        const std::uintptr_t word = word_.load(std::memory_order_acquire);
        if (word != kSet && word != kUnset) [[unlikely]]
            ReportDestroyedWithWaiter(WaiterOf(word & ~kLocked));
#endif
    }

private:
    static constexpr std::uintptr_t kUnset = 0;
    static constexpr std::uintptr_t kSet = 1;
    // ManyWaiters: or-ed into a word that holds waiters while a timeout unlinks its entry.
    static constexpr std::uintptr_t kLocked = 2;
    static_assert(alignof(SuspendedTaskEntry) > kLocked, "entries leave the low bits free");

    // ManyWaiters: swaps in `desired` once no timeout holds the chain; returns the word before.
    std::uintptr_t SwapUnlocked(std::uintptr_t desired, std::memory_order order) noexcept
    {
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
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

    // ManyWaiters: OnTimeout's claim. Unlinks `task` if the chain still holds it; false if a
    // Set claimed it first (the chain is then another one, or none).
    bool UnlinkForTimeout(SuspendedTask task) noexcept
    {
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
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
            // acquire: the links of the chain, as the publications' release wrote them.
            if (word_.compare_exchange_weak(word, word | kLocked, std::memory_order_acquire,
                                            std::memory_order_relaxed))
                break;
        }
        // Only we change the word or a link of this chain until the store below.
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
        // release: the edited links, for the Set that claims the chain next.
        word_.store(after, std::memory_order_release);
        return entry != nullptr;
    }

    void OnSuspended(SuspendedTask task) noexcept override
    {
        const std::uintptr_t self = WordOf(task);
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        for (unsigned spins = 0;;)
        {
            if (word == kSet)
            {
                ResumeTask(task); // never published: ours to resume
                return;
            }
            if constexpr (ManyWaiters)
            {
                if (word & kLocked) // a timeout is unlinking an entry: wait for the chain
                {
                    SpinPause(spins);
                    word = word_.load(std::memory_order_relaxed);
                    continue;
                }
                task.Entry()->next = word == kUnset ? nullptr : EntryOf(word);
            }
            else
                TC_CHECK(word == kUnset, "one waiter at a time on a _s event",
                         "a second waiter suspended on a ManualResetEvent_s");
            // release: publishes the waiter (and its link); acquire on failure to re-read.
            if (word_.compare_exchange_weak(word, self, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return; // the last access: from here on the setter owns the waiter
        }
    }

    bool OnTimeout(SuspendedTask task) noexcept override
    {
        if constexpr (ManyWaiters)
        {
            return UnlinkForTimeout(task); // against a Set's claim of the whole chain
        }
        else
        {
            return ClaimForTimeout(word_, task, kUnset); // against a Set's claim
        }
    }

    std::atomic<std::uintptr_t> word_;
};
} // namespace TC::Synchronization::detail
