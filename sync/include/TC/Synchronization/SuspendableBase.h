#pragma once
// SuspendableBase<Kind>: keeps the suspended waiters of one primitive and resumes them.

#include <TC/Checked.h>
#include <TC/Diagnostics.h>
#include <TC/ConcurrentStack.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>
#include <TC/detail/Fence.h>
#include <TC/Synchronization/SuspensionKind.h>

#include <TC/Synchronization/detail/BusyCount.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace TC::Synchronization
{
namespace detail
{
// The waiter that constructs a Multiple object: the calling task, or the calling thread when it
// is not a scheduler's worker; none on a worker outside a task (a coroutine has no identity).
TC_API TaskHandle CreatorHandle() noexcept;

// Checked mode: a primitive destroyed while a waiter is suspended on it. Names the rule, the
// primitive's type (recorded when the waiter suspended) and the waiter, then aborts.
[[noreturn]] inline void ReportDestroyedWithWaiter(SuspendedTask waiter) noexcept
{
    std::string detail;
    try
    {
        detail = WaitedOnType(waiter) + " was destroyed while " + DescribeWaiter(waiter)
                 + " was suspended on it";
    }
    catch (...)
    {
        detail = "a primitive was destroyed while a waiter was suspended on it";
    }
    ReportRuleViolation("destroy a primitive only when nobody waits on it", detail.c_str());
}
} // namespace detail

template <SuspensionKind Kind>
class SuspendableBase;

// The Single kind: one waiter at a time in one atomic slot; the only kind with timeouts.
//
// A derived primitive calls Suspend() or SuspendFor() from the waiter; the waiter is published in
// the slot once it is off the processor, then OnPublished() runs (the re-check hook that
// Suspendable and Waitable fill in). Resume() claims the slot with one exchange, so each handle
// reaches ResumeTask exactly once however many threads race to resume it; a timeout claims it
// with the same exchange. Destroy the object only when no waiter is suspended on it and no
// Resume of it is still running; the waiter may destroy it as soon as its wait returned. A timed
// waiter (SuspendFor) counts as waiting until its wait returned, even once a Resume claimed it:
// the timer thread may have begun its OnTimeout, which reads the slot, just before that Resume,
// and the wait returns only after OnTimeout has (so the waiter itself may destroy it then).
//
// Re-check in flight: the re-check reads the object after the waiter was published, so (as
// seed 004 says of its Mailbox) a waiter that a Resume reached meanwhile could return from its
// wait while the re-check still runs on the thread it left. The publication is therefore
// counted (one RMW before it, a release decrement after the re-check, its last access), and
// Suspend/SuspendFor return only once none is in flight; a coroutine awaiter built on
// Callback() calls WaitOutPublishers() in await_resume. The _s events (AutoResetEvent_s,
// ManualResetEvent_s) avoid the two RMWs by keeping the setters' state and the waiter in one
// word.
template <>
class SuspendableBase<SuspensionKind::Single> : private ISuspendCallback
{
public:
    SuspendableBase(const SuspendableBase&) = delete;
    SuspendableBase& operator=(const SuspendableBase&) = delete;

    // A snapshot: true if a waiter was published at the moment of the load.
    bool IsSuspended() const noexcept { return waiter_.load() != nullptr; }

protected:
    SuspendableBase() noexcept = default;
    virtual ~SuspendableBase()
    {
#if TC_CHECKED
        if (const SuspendedTask waiter = waiter_.load(std::memory_order_relaxed)) [[unlikely]]
            detail::ReportDestroyedWithWaiter(waiter);
#endif
    }

    // Suspends the calling task or converted thread until Resume() claims it. Not from a
    // callback, not from a worker thread outside a task (coroutines co_await instead).
    void Suspend()
    {
        SuspendTask(this);
        WaitOutPublishers();
    }

    // As Suspend, but gives up after `timeout`: returns false if the wait timed out (the slot
    // was taken back), true if a Resume claimed the waiter first. No limit without EnableTimers.
    bool SuspendFor(Duration timeout)
    {
        const bool resumed = SuspendTaskFor(this, timeout);
        WaitOutPublishers();
        return resumed;
    }

    // Returns once the waiter's publication and re-check have left the object (see the class
    // comment), and every ResumerScope with them; a few instructions at most, never a suspension.
    void WaitOutPublishers() const noexcept { publishing_.Drain(); }

    // For a resumer whose state change a waiter can act on before this resumer has claimed the
    // slot (a Put that stores a value, then claims: the taker may find the value at once).
    // Held from before the state change until the claim (ClaimWaiter; the ResumeTask after it,
    // outside), and drained by a waiter that saw the state before it waits again or returns, it
    // keeps that late claim from taking the waiter's next wait (a spurious resume a coroutine
    // cannot loop over) and from touching an object the waiter has destroyed. Costs the resumer
    // two read-modify-writes; a waiter waits at most for a store and an exchange.
    [[nodiscard]] detail::BusyCount::Scope ResumerScope() noexcept
    {
        return detail::BusyCount::Scope(publishing_);
    }

    // Resumes the waiter suspended now, if any; true if there was one. Any thread, any time.
    // It does not touch the object after the waiter's ResumeTask.
    bool Resume() noexcept
    {
        if (const SuspendedTask waiter = ClaimWaiter())
        {
            ResumeTask(waiter);
            return true;
        }
        return false;
    }

    // Claims the waiter suspended now (nullptr if none) without resuming it, for a resumer that
    // must leave the object -- end its ResumerScope -- before it calls ResumeTask on the handle.
    SuspendedTask ClaimWaiter() noexcept { return waiter_.exchange(nullptr); }

    // The same as Resume for one slot.
    bool ResumeNext() noexcept { return Resume(); }

    // The same as Resume: one slot cannot re-enter a resume in progress.
    bool ResumeNonReentrant() noexcept { return Resume(); }

    // The callback that publishes into the slot and runs OnPublished, for coroutine awaiters.
    ISuspendCallback* Callback() noexcept { return this; }

    // The re-check: runs after the waiter was published, on the thread that suspended it,
    // outside any task. It may run after the waiter was already resumed by someone else.
    virtual void OnPublished() noexcept {}

private:
    void OnSuspended(SuspendedTask task) noexcept final
    {
        detail::BusyCount::Scope publishing(publishing_); // ends with the last access
        // seq_cst: pairs with the state change of the resumer (store state, then exchange the
        // slot) so that either the resumer sees the waiter or OnPublished sees the state.
        [[maybe_unused]] const SuspendedTask previous = waiter_.exchange(task);
        TC_CHECK(previous == nullptr, "one waiter at a time on a Single primitive",
                 "a second task suspended on a SuspensionKind::Single object");
        OnPublished();
    }

    bool OnTimeout(SuspendedTask task) noexcept final
    {
        SuspendedTask expected = task;
        return waiter_.compare_exchange_strong(expected, nullptr);
    }

    std::atomic<SuspendedTask> waiter_{nullptr};
    detail::BusyCount publishing_; // a publication and re-check in flight
};

// The Multiple kind: any number of waiters on a lock-free intrusive stack, no timeouts.
//
// Waiters are chained through their SuspendedTaskEntry's leading link (no allocation) and woken
// newest first. The waiter that constructed the object -- a task, or a converted thread -- is kept
// in a slot of its own and resumed last by Resume(), so it may destroy the object once its wait
// returns, provided every other Resume of the object has returned too (a resumer that is still
// inside Resume touches the object; that is the rule the guide states for Latch). Destroy the
// object only when no waiter is suspended on it.
//
// Re-checks in flight: a waiter's publication and re-check (OnPublished) run on the thread it
// suspended from and may still be running when a Resume has already resumed it, and the
// creator with it. Every publication is therefore counted (one RMW before the push, one after
// the re-check, its last access to the object), and Suspend() returns only once no publication
// is in flight; a coroutine awaiter over Callback() calls WaitOutPublishers() in await_resume.
// So when the creator's wait returns, the re-check of every waiter resumed before it is over.
template <>
class SuspendableBase<SuspensionKind::Multiple> : private ISuspendCallback
{
public:
    SuspendableBase(const SuspendableBase&) = delete;
    SuspendableBase& operator=(const SuspendableBase&) = delete;

    // A snapshot: true if a waiter was published at the moment of the loads.
    bool IsSuspended() const noexcept
    {
        // The fence orders the loads after the caller's state change, whatever its ordering: the
        // other half of the publisher's push-fence-recheck.
        TC::detail::SeqCstFence();
        return IsSuspendedAfterSeqCstChange();
    }

protected:
    // As IsSuspended, for a caller whose state change just before was a seq_cst store or RMW:
    // seq_cst loads take the fence's place. By C++20 [atomics.order] p4 that store precedes the
    // loads in the single total order, a load that misses a push precedes the pusher's fence,
    // and the pusher's re-check after its fence then sees the store. On x86 a seq_cst load is a
    // plain load and the fence a locked instruction (4 ns of an uncontended Set+Wait here).
    bool IsSuspendedAfterSeqCstChange() const noexcept
    {
        return !waiters_.IsEmpty(std::memory_order_seq_cst) || creatorWaiter_.load() != nullptr;
    }

    // A hint with no ordering: a waiter may be published now. For a resumer choosing between
    // ResumeNext (whose fence and pop decide) and a path that handles a missed waiter anyway.
    bool MayHaveWaiter() const noexcept
    {
        return !waiters_.IsEmpty(std::memory_order_relaxed) ||
               creatorWaiter_.load(std::memory_order_relaxed) != nullptr;
    }

    SuspendableBase() noexcept : creator_(detail::CreatorHandle()) {}
    virtual ~SuspendableBase()
    {
#if TC_CHECKED
        if (SuspendedTaskEntry* waiter = waiters_.PopAll()) [[unlikely]]
            detail::ReportDestroyedWithWaiter(SuspendedTask(waiter));
        if (const SuspendedTask waiter = creatorWaiter_.load(std::memory_order_relaxed)) [[unlikely]]
            detail::ReportDestroyedWithWaiter(waiter);
#endif
    }

    // Suspends the calling task or converted thread until a Resume reaches it. Not from a
    // callback, not from a worker thread outside a task (coroutines co_await instead).
    void Suspend()
    {
        if (creator_ && GetCurrentTask() == creator_)
        {
            // The creator goes to its own slot. Its callback lives on its stack for this wait;
            // OnSuspended copies what it needs before publishing.
            CreatorCallback callback(this);
            SuspendTask(&callback);
        }
        else
        {
            SuspendTask(this);
        }
        WaitOutPublishers();
    }

    // Returns once no waiter's publication and re-check is running on the object (see the class
    // comment); a few instructions of someone else's OnSuspended at most, never a suspension.
    void WaitOutPublishers() const noexcept { publishing_.Drain(); }

    // Resumes every waiter suspended now, newest first, the creator last. Returns the number
    // resumed. Any thread. The object is not touched after the last ResumeTask.
    std::size_t Resume() noexcept
    {
        std::size_t resumed = 0;
        // PopAll peeks at the head with a relaxed load; the fence orders that peek after the
        // caller's state change (the resumer's half of the store-load pairing).
        TC::detail::SeqCstFence();
        SuspendedTaskEntry* entry = waiters_.PopAll();
        while (entry)
        {
            // The link belongs to us until ResumeTask; read it first.
            SuspendedTaskEntry* const next = entry->next;
            ResumeTask(SuspendedTask(entry));
            entry = next;
            ++resumed;
        }
        if (const SuspendedTask creator = TakeCreatorWaiter())
        {
            ResumeTask(creator);
            ++resumed;
        }
        return resumed;
    }

    // Resumes the newest waiter (the creator only when nobody else waits); true if there was one.
    bool ResumeNext() noexcept
    {
        TC::detail::SeqCstFence(); // as in Resume
        return ResumeNextUnordered();
    }

    // As ResumeNext, but without ordering its peeks after the caller's earlier writes: for a
    // resumer whose state change need not precede them, because it made none yet and handles a
    // waiter this misses itself (AutoResetEvent::Set). Saves the fence's RMW.
    bool ResumeNextUnordered() noexcept
    {
        if (SuspendedTaskEntry* const entry = waiters_.Pop())
        {
            ResumeTask(SuspendedTask(entry));
            return true;
        }
        if (const SuspendedTask creator = TakeCreatorWaiter())
        {
            ResumeTask(creator);
            return true;
        }
        return false;
    }

    // Resume for callers that may be re-entered: a ResumeTask that runs a coroutine inline may
    // reach code that calls it again, on this thread or another. At most one call resumes at a
    // time; a call that finds one running hands its request over and returns at once, and the
    // running call loops until no request is left. Bounded stack depth, no concurrent resumers.
    // Unlike Resume, it touches the object after resuming, so it does not give the creator the
    // right to destroy the object when its wait returns.
    void ResumeNonReentrant() noexcept
    {
        if (resumeRequests_.fetch_add(1) != 0)
            return; // the running call will see our request
        std::uint32_t handled = 1;
        for (;;)
        {
            Resume();
            const std::uint32_t now = resumeRequests_.fetch_sub(handled) - handled;
            if (now == 0)
                return;
            handled = now;
        }
    }

    // The callback that publishes on the stack and runs OnPublished, for coroutine awaiters
    // (a coroutine is never treated as the creator).
    ISuspendCallback* Callback() noexcept { return this; }

    // The re-check: runs after the waiter was published, on the thread that suspended it,
    // outside any task. It may run after the waiter was already resumed by someone else.
    virtual void OnPublished() noexcept {}

private:
    class CreatorCallback final : public ISuspendCallback
    {
    public:
        explicit CreatorCallback(SuspendableBase* owner) noexcept : owner_(owner) {}
        CreatorCallback(const CreatorCallback&) = delete;
        CreatorCallback& operator=(const CreatorCallback&) = delete;
        virtual ~CreatorCallback() = default;

        void OnSuspended(SuspendedTask task) noexcept override
        {
            SuspendableBase* const owner = owner_; // this callback dies with the wait
            detail::BusyCount::Scope publishing(owner->publishing_); // ends with the last access
            [[maybe_unused]] const SuspendedTask previous = owner->creatorWaiter_.exchange(task);
            TC_CHECK(previous == nullptr, "a handle reaches ResumeTask exactly once",
                     "the creator of a Multiple object suspended on it twice");
            owner->OnPublished();
        }

    private:
        SuspendableBase* owner_;
    };

    // The creator's slot, claimed by exchange only when the peek finds it taken: an empty slot
    // (the common case) costs a load, not an RMW. Relaxed peek: callers ran the seq_cst fence
    // that orders it after their state change, as for the stack's head.
    SuspendedTask TakeCreatorWaiter() noexcept
    {
        if (creatorWaiter_.load(std::memory_order_relaxed) == nullptr)
            return nullptr;
        return creatorWaiter_.exchange(nullptr);
    }

    void OnSuspended(SuspendedTask task) noexcept final
    {
        // Push is a release CAS; the re-check in OnPublished reads the state with seq_cst. The
        // fence makes the pair a full store-load barrier against the resumer's state change.
        detail::BusyCount::Scope publishing(publishing_); // ends with the last access
        waiters_.Push(task.Entry());
        TC::detail::SeqCstFence();
        OnPublished();
    }

    ConcurrentStack<SuspendedTaskEntry> waiters_;
    std::atomic<SuspendedTask> creatorWaiter_{nullptr};
    std::atomic<std::uint32_t> resumeRequests_{0};
    detail::BusyCount publishing_; // publications and re-checks in flight
    TaskHandle creator_;
};
} // namespace TC::Synchronization
