#pragma once
// Mailbox<T>: holds one value of T for one waiting taker; the generic form of the guide's Mailbox.
//   TC::Synchronization::Mailbox<int> box;
//   box.Put(7);  /* elsewhere */  int value = box.Take();

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>
#include <TC/Synchronization/SuspendableBase.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/TimeBudget.h>
#include <TC/Synchronization/detail/WaiterWord.h>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
// Put from any thread, any number of times (replacing an untaken value); Take suspends until
// a value is there. One taker at a time (TryTake counts; checked mode fails a second).
/// - A late Put never resumes the taker's next wait.
/// - T's move constructor must not throw (hold such T in std::unique_ptr); a throwing copy into
///   Put's parameter happens before the mailbox is touched.
/// - Destruction: with no taker suspended and no Put running, or by the taker once Take returned.
template <class T>
class Mailbox : private ISuspendCallback
{
    static_assert(
        std::is_nothrow_move_constructible_v<T>,
        "Mailbox<T> needs a T whose move constructor is noexcept: a Put that claimed the "
        "suspended taker must hand it the value (hold the value through std::unique_ptr)");

public:
    Mailbox() = default;
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;

    // Virtual for -Wnon-virtual-dtor only.
    virtual ~Mailbox()
    {
#if TC_CHECKED
        // acquire: synchronizes with the last Put.
        const std::uintptr_t word = word_.load(std::memory_order_acquire);
        if (IsWaiter(word)) [[unlikely]]
            detail::ReportDestroyedWithWaiter(detail::WaiterOf(word));
#endif
    }

    // Stores the value (true if it replaced one), resumes the taker. Any thread or callback.
    bool Put(T value) noexcept
    {
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        for (unsigned spins = 0;;)
        {
            word = WaitOutLock(word, spins);
            // Claim a suspended taker, else lock the slot. acquire: publication or slot writes.
            if (!word_.compare_exchange_weak(word, IsWaiter(word) ? kEmpty : kLocked,
                                             std::memory_order_acquire, std::memory_order_relaxed))
                continue;
            if (IsWaiter(word))
            {
                // The taker reads the handoff only after our ResumeTask.
                handoff_.emplace(std::move(value));
                ResumeTask(detail::WaiterOf(word));
                return false;
            }
            const bool replaced = word == kFull;
            // The old value's destructor (which might Put) runs after the unlock.
            std::optional<T> old;
            if (replaced)
                old.emplace(std::move(*value_));
            value_.emplace(std::move(value));
            // release: our value to the next locker. Last access: the taker may destroy.
            word_.store(kFull, std::memory_order_release);
            return replaced;
        }
    }

    // Takes the value if there. Never suspends (may wait out a Put's move of a T).
    std::optional<T> TryTake() noexcept
    {
        if (handoff_) // a taker a Put resumed
            return TakeHandoff();
        std::uintptr_t word = word_.load(std::memory_order_relaxed);
        for (unsigned spins = 0;;)
        {
            word = WaitOutLock(word, spins);
            if (word != kFull)
                return std::nullopt; // empty (or, against the one-taker rule, a taker waits)
            // acquire: the last Put's value.
            if (word_.compare_exchange_weak(word, kLocked, std::memory_order_acquire,
                                            std::memory_order_relaxed))
                break;
        }
        std::optional<T> taken(std::move(*value_));
        value_.reset();
        // release: our slot read before the next Put's write.
        word_.store(kEmpty, std::memory_order_release);
        return taken;
    }

    // Suspends (task or converted thread) until a value is there, then takes it.
    T Take()
    {
        for (;;)
        {
            if (std::optional<T> taken = TryTake())
                return std::move(*taken);
            SuspendTask(this);
        }
    }

    // As Take; std::nullopt if nothing arrived within `timeout`.
    std::optional<T> Take(Duration timeout)
    {
        if (timeout.IsInfinite())
            return Take();
        detail::TimeBudget budget(timeout);
        for (;;)
        {
            if (std::optional<T> taken = TryTake())
                return taken;
            const auto left = budget.Left();
            if (left <= left.zero() || !SuspendTaskFor(this, left))
                return TryTake(); // a Put may have raced the timeout
        }
    }

    // Snapshot: a taker is suspended.
    bool IsSuspended() const noexcept
    {
        return IsWaiter(word_.load(std::memory_order_acquire));
    }

    // co_await box.TakeAsync(): the value; TakeAsync(timeout): std::optional<T>. Resumes on
    // the executor current at suspension.
    class [[nodiscard("co_await it")]] TakeAwaiter
    {
    public:
        explicit TakeAwaiter(Mailbox & owner) noexcept : owner_(owner), inner_(&owner) {}
        bool await_ready() noexcept
        {
            return (taken_ = owner_.TryTake()).has_value();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        T await_resume() noexcept
        {
            // Handoff or full slot: either way the value is there (tests/model/mailbox_word.pml).
            if (!taken_)
                taken_ = owner_.TryTake();
            TC_CHECK(taken_.has_value(), "one taker at a time on a Mailbox",
                     "a Mailbox taker was resumed and found no value");
            return std::move(*taken_);
        }

    private:
        Mailbox& owner_;
        SuspendAwaiter inner_;
        std::optional<T> taken_;
    };

    class [[nodiscard("co_await it")]] TakeForAwaiter
    {
    public:
        TakeForAwaiter(Mailbox & owner, Duration timeout) noexcept
            : owner_(owner), inner_(&owner, timeout)
        {
        }
        bool await_ready() noexcept
        {
            return (taken_ = owner_.TryTake()).has_value();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        std::optional<T> await_resume() noexcept
        {
            if (!taken_)
            {
                (void)inner_.await_resume(); // settles the timer; a late Put still counts
                taken_ = owner_.TryTake();
            }
            return std::move(taken_);
        }

    private:
        Mailbox& owner_;
        SuspendForAwaiter inner_;
        std::optional<T> taken_;
    };

    TakeAwaiter TakeAsync() noexcept { return TakeAwaiter(*this); }
    TakeForAwaiter TakeAsync(Duration timeout) noexcept { return TakeForAwaiter(*this, timeout); }

private:
    // The word's states; a taker's (pointer-aligned) entry is none of them.
    static constexpr std::uintptr_t kEmpty = 0;
    static constexpr std::uintptr_t kFull = 1;
    static constexpr std::uintptr_t kLocked = 2;

    static bool IsWaiter(std::uintptr_t word) noexcept
    {
        return word > kLocked;
    }
    // Reloads `word` until no move of a T holds the lock; `spins` paces retries.
    std::uintptr_t WaitOutLock(std::uintptr_t word, unsigned& spins) const noexcept
    {
        while (word == kLocked)
        {
            detail::SpinPause(spins);
            word = word_.load(std::memory_order_relaxed);
        }
        return word;
    }

    std::optional<T> TakeHandoff() noexcept
    {
        std::optional<T> taken(std::move(*handoff_));
        handoff_.reset();
        return taken;
    }

    // Publishes the taker, or resumes it at once if full.
    void OnSuspended(SuspendedTask task) noexcept override
    {
        const std::uintptr_t self = detail::WordOf(task);
        std::uintptr_t word = word_.load(std::memory_order_relaxed); // the CAS decides
        for (unsigned spins = 0;;)
        {
            word = WaitOutLock(word, spins);
            if (word == kFull)
            {
                ResumeTask(task); // never published: ours to resume
                return;
            }
            TC_CHECK(word == kEmpty, "one waiter at a time on a Single primitive",
                     "a second taker suspended on a Mailbox");
            // release: publishes the handle, orders our handoff read before the next Put.
            if (word_.compare_exchange_weak(word, self, std::memory_order_release,
                                            std::memory_order_relaxed))
                return; // last access: a Put owns the taker
        }
    }

    // The timer's claim against a Put's: whoever moves the word off the taker owns it.
    bool OnTimeout(SuspendedTask task) noexcept override
    {
        return detail::ClaimForTimeout(word_, task, kEmpty);
    }

    std::atomic<std::uintptr_t> word_{kEmpty};
    std::optional<T> value_;   // the slot: under the lock state, or owned by the word's kFull
    std::optional<T> handoff_; // written by the Put that claimed the taker; read by the taker
};
} // namespace TC::Synchronization
