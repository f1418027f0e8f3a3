#pragma once
// OneWordEvent: the shared core of AutoResetEvent_s, ManualResetEvent_s and ManualResetEvent --
// state and waiters in one atomic word, so one compare-exchange publishes and checks at once.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>
#include <TC/Synchronization/SuspendableBase.h>
#include <TC/Synchronization/detail/WaiterWord.h>

#include <atomic>
#include <coroutine>
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
// ManyWaiters (ManualResetEvent) has no timed wait: a timed-out waiter would have to unlink
// itself from the middle of the chain.
template <bool AutoReset, bool ManyWaiters = false>
class OneWordEvent : private ISuspendCallback
{
    static_assert(!(AutoReset && ManyWaiters),
                  "an auto-reset event with many waiters is AutoResetEvent");

public:
    OneWordEvent(const OneWordEvent&) = delete;
    OneWordEvent& operator=(const OneWordEvent&) = delete;

    void Set() noexcept
    {
        if constexpr (AutoReset)
        {
            std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
            for (;;)
            {
                // A Set that finds the event set still writes kSet over it, through the CAS:
                // the waiter that consumes the signal reads this write (its consume is an RMW
                // too), so it sees what our caller wrote before Set. Returning on the load
                // alone lost that: the waiter could consume the earlier Set's signal, read the
                // data as it was then, and wait again on an unset event (store buffering: our
                // load and the waiter's load both read the old values).
                const std::uintptr_t desired = word == kUnset || word == kSet ? kSet : kUnset;
                // acq_rel: acquire the waiter's publication, release our state to the waiter.
                if (word_.compare_exchange_weak(word, desired, std::memory_order_acq_rel,
                                                std::memory_order_relaxed))
                    break;
            }
            if (word != kUnset && word != kSet)
                ResumeTask(WaiterOf(word));
        }
        else
        {
            // acq_rel: as above; an exchange both opens the event and claims the waiters. Its
            // acquire also covers the older waiters' links: each publication is an RMW, so the
            // publications form one release sequence that this exchange reads the end of.
            const std::uintptr_t word = word_.exchange(kSet, std::memory_order_acq_rel);
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

    // Passes if set (clearing it for the auto-reset kind). Never suspends.
    bool TryWait() noexcept
    {
        if constexpr (AutoReset)
        {
            // The consume is an RMW, so it reads the last Set's write (a Set on a set event
            // writes kSet again) and sees what every Set it coalesces wrote before it. A load
            // then a plain store read an older Set's write and lost the newer one's data.
            // acquire: what the setters wrote before Set is visible to the waiter that passes.
            // The load first: a waiter that finds no signal goes on to publish itself with an
            // RMW that re-reads the word, so a stale "unset" here costs nothing but that.
            std::uintptr_t expected = kSet;
            return word_.load(std::memory_order_relaxed) == kSet &&
                   word_.compare_exchange_strong(expected, kUnset, std::memory_order_acquire,
                                                 std::memory_order_relaxed);
        }
        else
        {
            return word_.load(std::memory_order_acquire) == kSet;
        }
    }

    void Wait()
    {
        if (!TryWait())
            SuspendTask(this);
    }

    bool Wait(Duration timeout) requires(!ManyWaiters)
    {
        return TryWait() || SuspendTaskFor(this, timeout);
    }

    class [[nodiscard("co_await it")]] WaitAwaiter
    {
    public:
        explicit WaitAwaiter(OneWordEvent & owner) noexcept : owner_(owner), inner_(&owner) {}
        bool await_ready() noexcept
        {
            return owner_.TryWait();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        void await_resume() const noexcept {}

    private:
        OneWordEvent& owner_;
        SuspendAwaiter inner_;
    };

    class [[nodiscard("co_await it")]] WaitForAwaiter
    {
    public:
        WaitForAwaiter(OneWordEvent & owner, Duration timeout) noexcept
            : owner_(owner), inner_(&owner, timeout)
        {
        }
        bool await_ready() noexcept
        {
            return ready_ = owner_.TryWait();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        bool await_resume() noexcept
        {
            return ready_ || inner_.await_resume();
        }

    private:
        OneWordEvent& owner_;
        SuspendForAwaiter inner_;
        bool ready_ = false;
    };

protected:
    explicit OneWordEvent(bool initiallySet) noexcept : word_(initiallySet ? kSet : kUnset) {}
    // Virtual only because the class has virtual members (-Wnon-virtual-dtor); never deleted
    // through a base pointer.
    virtual ~OneWordEvent()
    {
#if TC_CHECKED
        // acquire, as IsSuspended: the destroying thread synchronizes with the last Set.
        const std::uintptr_t word = word_.load(std::memory_order_acquire);
        if (word != kSet && word != kUnset) [[unlikely]]
            ReportDestroyedWithWaiter(WaiterOf(word));
#endif
    }

private:
    static constexpr std::uintptr_t kUnset = 0;
    static constexpr std::uintptr_t kSet = 1;

    void OnSuspended(SuspendedTask task) noexcept override
    {
        const std::uintptr_t self = WordOf(task);
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        for (;;)
        {
            if (word == kSet)
            {
                if constexpr (AutoReset)
                {
                    // acquire: we pass, so we see what the setter published.
                    if (!word_.compare_exchange_weak(word, kUnset, std::memory_order_acquire,
                                                     std::memory_order_relaxed))
                        continue;
                }
                ResumeTask(task); // never published: ours to resume
                return;
            }
            if constexpr (ManyWaiters)
                task.Entry()->next = word == kUnset ? nullptr : EntryOf(word);
            else
                TC_CHECK(word == kUnset, "one waiter at a time on a _s event",
                         "a second waiter suspended on an AutoResetEvent_s/ManualResetEvent_s");
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
            return false; // unreachable: no timed wait (the callback's default answer)
        }
        else
        {
            return ClaimForTimeout(word_, task, kUnset); // against a Set's claim
        }
    }

    std::atomic<std::uintptr_t> word_;
};
} // namespace TC::Synchronization::detail
