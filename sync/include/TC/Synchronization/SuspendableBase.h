#pragma once
// SuspendableBase<Kind>: keeps the suspended waiters of one primitive and resumes them.
//   class Gate : SuspendableBase<SuspensionKind::Multiple> { void Wait() { Suspend(); } };

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
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaitNode.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace TC::Synchronization
{
namespace detail
{
// A Multiple object's creator: the calling task or converted thread; none outside a task.
TC_API TaskHandle CreatorHandle() noexcept;

// Checked mode: destroyed with a waiter suspended.
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

// The Single kind: one waiter at a time in one atomic slot; a timeout claims it back.
/// - The waiter is published once off the processor, then OnPublished() (the re-check) runs.
/// - Resume() and a timeout claim the slot with one exchange: each handle reaches ResumeTask
///   exactly once.
/// - Destroy it with no waiter suspended and no Resume running, or by the waiter once its wait
///   returned (a timed wait returns only after a racing OnTimeout).
/// - Suspend/SuspendFor return only once no publication or re-check is in flight.
template <>
class SuspendableBase<SuspensionKind::Single> : private ISuspendCallback
{
public:
    SuspendableBase(const SuspendableBase&) = delete;
    SuspendableBase& operator=(const SuspendableBase&) = delete;

    // Snapshot: a waiter is published.
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

    // Suspends the calling task or converted thread (not a callback) until Resume().
    void Suspend()
    {
        SuspendTask(this);
        WaitOutPublishers();
    }

    // As Suspend; false on timeout, true if a Resume claimed it first (no limit without timers).
    bool SuspendFor(Duration timeout)
    {
        const bool resumed = SuspendTaskFor(this, timeout);
        WaitOutPublishers();
        return resumed;
    }

    // Returns once publication, re-check and every ResumerScope left; never suspends.
    void WaitOutPublishers() const noexcept { publishing_.Drain(); }

    // Held from before a state change a waiter can act on until ClaimWaiter (design notes).
    [[nodiscard]] detail::BusyCount::Scope ResumerScope() noexcept
    {
        return detail::BusyCount::Scope(publishing_);
    }

    // Resumes the waiter, true if one. Any thread; no access after ResumeTask.
    bool Resume() noexcept
    {
        if (const SuspendedTask waiter = ClaimWaiter())
        {
            ResumeTask(waiter);
            return true;
        }
        return false;
    }

    // Claims the waiter (or nullptr) without resuming it.
    SuspendedTask ClaimWaiter() noexcept { return waiter_.exchange(nullptr); }

    // Resume, for one slot.
    bool ResumeNext() noexcept { return Resume(); }

    // Resume: one slot cannot re-enter a resume in progress.
    bool ResumeNonReentrant() noexcept { return Resume(); }

    // For coroutine awaiters, which call WaitOutPublishers() in await_resume.
    ISuspendCallback* Callback() noexcept { return this; }

    // What a timed coroutine awaiter holds: the slot's callback.
    class TimedWait
    {
    public:
        explicit TimedWait(SuspendableBase& owner) noexcept : callback_(owner.Callback()) {}
        ISuspendCallback* Callback() noexcept { return callback_; }

    private:
        ISuspendCallback* callback_;
    };

    // The re-check, after publication, outside any task; may run after the waiter was resumed.
    virtual void OnPublished() noexcept {}

private:
    void OnSuspended(SuspendedTask task) noexcept final
    {
        detail::BusyCount::Scope publishing(publishing_); // ends with the last access
        // seq_cst: the resumer sees the waiter or OnPublished sees the state.
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

// The Multiple kind: any number of waiters on a lock-free intrusive stack, and timed waiters.
/// - Waiters chain through their entries (no allocation), woken newest first; timed waiters
///   other than the creator sit on a locked FIFO, woken after the stack, oldest first.
///   Timeout and resume: exactly one wins.
/// - The creator waits in its own slot, resumed last, by ResumeNext only when nobody else waits.
/// - A waiter other than the creator never touches the object once handed to ResumeTask.
/// - The creator's wait (or pass plus WaitOutCallsIfCreator) returns after every call that
///   entered before it passed left; it may then destroy the object if no call begins later and
///   no other timed wait still runs. ResumeNextUnordered holds no scope: its caller's rule.
/// - Anyone else destroys it only when nobody waits and no call on it runs.
template <>
class SuspendableBase<SuspensionKind::Multiple> : private ISuspendCallback
{
public:
    SuspendableBase(const SuspendableBase&) = delete;
    SuspendableBase& operator=(const SuspendableBase&) = delete;

    // Snapshot: a waiter is published.
    bool IsSuspended() const noexcept
    {
        // Orders the loads after the caller's state change.
        TC::detail::SeqCstFence();
        return IsSuspendedAfterSeqCstChange();
    }

protected:
    // As IsSuspended, after a seq_cst store or RMW: seq_cst loads take the fence's place.
    bool IsSuspendedAfterSeqCstChange() const noexcept
    {
        return !waiters_.IsEmpty(std::memory_order_seq_cst) || creatorWaiter_.load() != nullptr ||
               timedCount_.load() != 0;
    }

    // A hint, unordered: a waiter may be published now.
    bool MayHaveWaiter() const noexcept
    {
        return !waiters_.IsEmpty(std::memory_order_relaxed) ||
               creatorWaiter_.load(std::memory_order_relaxed) != nullptr ||
               timedCount_.load(std::memory_order_relaxed) != 0;
    }

    SuspendableBase() noexcept : creator_(detail::CreatorHandle()) {}
    virtual ~SuspendableBase()
    {
#if TC_CHECKED
        if (SuspendedTaskEntry* waiter = waiters_.PopAll()) [[unlikely]]
            detail::ReportDestroyedWithWaiter(SuspendedTask(waiter));
        if (const SuspendedTask waiter = creatorWaiter_.load(std::memory_order_relaxed)) [[unlikely]]
            detail::ReportDestroyedWithWaiter(waiter);
        if (!timed_.IsEmpty()) [[unlikely]]
            detail::ReportDestroyedWithWaiter(timed_.Front()->task);
#endif
    }

    // Suspends the calling task or converted thread (not a callback) until resumed; only the
    // creator touches the object after.
    void Suspend()
    {
        if (IsCreatorHere())
        {
            // The creator's callback lives on its stack for this wait.
            CreatorCallback callback(this);
            SuspendTask(&callback);
            busy_.Drain();
        }
        else
        {
            SuspendTask(this); // from here on the object may be gone
        }
    }

    // As Suspend; false on timeout, true if a resume reached it first (no limit without timers).
    bool SuspendFor(Duration timeout)
    {
        if (IsCreatorHere())
        {
            CreatorCallback callback(this);
            const bool resumed = SuspendTaskFor(&callback, timeout);
            busy_.Drain();
            return resumed;
        }
        TimedWait node(*this);
        return SuspendTaskFor(node.Callback(), timeout);
    }

    // After a pass without suspending: the creator waits out earlier calls; others one load.
    void WaitOutCallsIfCreator() const noexcept
    {
        busy_.DrainIf([this]() noexcept { return IsCreatorHere(); });
    }

    // Held from before a state change that lets the creator pass until after the Resume.
    [[nodiscard]] detail::BusyCount::Scope ResumerScope() noexcept
    {
        return detail::BusyCount::Scope(busy_);
    }

    // Resumes every waiter now suspended, creator last; returns how many. Any thread.
    std::size_t Resume() noexcept
    {
        detail::BusyCount::Scope busy(busy_); // ends with the last access
        std::size_t resumed = 0;
        // Orders PopAll's relaxed peek after the caller's state change.
        TC::detail::SeqCstFence();
        SuspendedTaskEntry* entry = waiters_.PopAll();
        while (entry)
        {
            // Read the link before ResumeTask hands it over.
            SuspendedTaskEntry* const next = entry->next;
            ResumeTask(SuspendedTask(entry));
            entry = next;
            ++resumed;
        }
        resumed += ResumeTimed(kAllTimed);
        // Creator last: an inline-resumed waiter starting a new round still finds it waiting.
        if (const SuspendedTask creator = TakeCreatorWaiter())
        {
            ResumeTask(creator);
            ++resumed;
        }
        return resumed;
    }

    // Resumes the newest waiter (the creator only if alone); true if one. Holds a scope.
    bool ResumeNext() noexcept
    {
        detail::BusyCount::Scope busy(busy_); // ends with the last access
        TC::detail::SeqCstFence(); // as in Resume
        return ResumeNextUnordered();
    }

    // ResumeNext without fence and scope, for a resumer that handles a missed waiter itself.
    bool ResumeNextUnordered() noexcept
    {
        if (SuspendedTaskEntry* const entry = waiters_.Pop())
        {
            ResumeTask(SuspendedTask(entry));
            return true;
        }
        if (ResumeTimed(1) != 0)
            return true;
        if (const SuspendedTask creator = TakeCreatorWaiter())
        {
            ResumeTask(creator);
            return true;
        }
        return false;
    }

    // Resume for re-entrant callers: one resumes at a time, others hand over. Holds a scope.
    void ResumeNonReentrant() noexcept
    {
        detail::BusyCount::Scope busy(busy_); // ends with the last access
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

    // For coroutine awaiters: publishes on the stack, runs OnPublished.
    ISuspendCallback* Callback() noexcept { return this; }

    // A non-creator's timed wait: a timed-FIFO node in its frame; a timeout unlinks it unless a
    // resume took it off first.
    class TimedWait final : public detail::WaitNode
    {
    public:
        explicit TimedWait(SuspendableBase& owner) noexcept : owner_(&owner) {}
        ISuspendCallback* Callback() noexcept { return this; }

        void OnSuspended(SuspendedTask handle) noexcept override
        {
            SuspendableBase* const owner = owner_; // the node may be gone once published
            detail::BusyCount::Scope publishing(owner->busy_); // ends with the last access
            task = handle;
            {
                const std::lock_guard<detail::SpinLock> guard(owner->timedLock_);
                owner->timed_.PushBack(this);
                owner->timedCount_.fetch_add(1); // seq_cst, as the resumers' peeks
            }
            // Store-load barrier against the resumer's state change.
            TC::detail::SeqCstFence();
            owner->OnPublished();
        }

        bool OnTimeout(SuspendedTask) noexcept override
        {
            const std::lock_guard<detail::SpinLock> guard(owner_->timedLock_);
            if (!linked)
                return false; // a resume took it off and resumes it
            owner_->timed_.Remove(this);
            owner_->timedCount_.fetch_sub(1);
            return true;
        }

        WaitTarget WaitedOn() const noexcept override
        {
            const ISuspendCallback* owner = owner_;
            return {owner_, &typeid(*owner), nullptr};
        }

    private:
        SuspendableBase* owner_;
    };

    // The re-check, after publication, outside any task; may run after the waiter was resumed.
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
            detail::BusyCount::Scope publishing(owner->busy_); // ends with the last access
            [[maybe_unused]] const SuspendedTask previous = owner->creatorWaiter_.exchange(task);
            TC_CHECK(previous == nullptr, "a handle reaches ResumeTask exactly once",
                     "the creator of a Multiple object suspended on it twice");
            owner->OnPublished();
        }

        // Claims the slot back unless a resume took it first.
        bool OnTimeout(SuspendedTask task) noexcept override
        {
            SuspendedTask expected = task;
            return owner_->creatorWaiter_.compare_exchange_strong(expected, nullptr);
        }

        // The creator waits on the object, not on this slot.
        WaitTarget WaitedOn() const noexcept override
        {
            const ISuspendCallback* owner = owner_;
            return {owner_, &typeid(*owner), nullptr};
        }

    private:
        SuspendableBase* owner_;
    };

    // True on the creator.
    bool IsCreatorHere() const noexcept { return creator_ && GetCurrentTask() == creator_; }

    // Relaxed peek (callers fenced); exchange only when taken.
    SuspendedTask TakeCreatorWaiter() noexcept
    {
        if (creatorWaiter_.load(std::memory_order_relaxed) == nullptr)
            return nullptr;
        return creatorWaiter_.exchange(nullptr);
    }

    static constexpr std::size_t kAllTimed = ~std::size_t{0};

    // Resumes up to `most` timed waiters, oldest first; relaxed peek (callers ordered it).
    std::size_t ResumeTimed(std::size_t most) noexcept
    {
        if (timedCount_.load(std::memory_order_relaxed) == 0)
            return 0;
        detail::WaitNode* served = nullptr;
        detail::WaitNode** tail = &served;
        std::size_t count = 0;
        {
            const std::lock_guard<detail::SpinLock> guard(timedLock_);
            while (count < most && !timed_.IsEmpty())
            {
                detail::WaitNode* const node = timed_.PopFront();
                *tail = node;
                tail = &node->next;
                ++count;
            }
            timedCount_.fetch_sub(static_cast<std::uint32_t>(count));
        }
        *tail = nullptr;
        detail::ResumeChain(served, 1); // outside the lock: a resume may run a coroutine inline
        return count;
    }

    void OnSuspended(SuspendedTask task) noexcept final
    {
        // Push, fence, re-check: a store-load barrier against the resumer.
        detail::BusyCount::Scope publishing(busy_); // ends with the last access
        waiters_.Push(task.Entry());
        TC::detail::SeqCstFence();
        OnPublished();
    }

    ConcurrentStack<SuspendedTaskEntry> waiters_;
    std::atomic<SuspendedTask> creatorWaiter_{nullptr};
    std::atomic<std::uint32_t> resumeRequests_{0};
    detail::SpinLock timedLock_;                 // guards timed_
    detail::WaitList timed_;                     // timed waiters other than the creator, FIFO
    std::atomic<std::uint32_t> timedCount_{0};   // timed_'s length, for lock-free peeks
    detail::BusyCount busy_; // calls in flight that the creator's wait waits out
    TaskHandle creator_;
};
} // namespace TC::Synchronization
