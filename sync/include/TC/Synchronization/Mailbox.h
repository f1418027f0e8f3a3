#pragma once
// Mailbox<T>: holds one value of T for one waiting taker; the generic form of the guide's Mailbox.

#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/Suspendable.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/TimeBudget.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <mutex>
#include <optional>
#include <utility>

namespace TC::Synchronization
{
// Put may be called from any thread, any number of times: a value not yet taken is replaced
// (Put reports that). Take suspends until a value is there. One taker at a time (a task, a
// converted thread or a coroutine; SuspensionKind::Single, so timed takes work).
//
// Design: the value sits under a tiny spinlock (T need not be atomic); the waiter in the Single
// slot of SuspendableBase. Put stores the value and then claims the slot; the taker's re-check
// (TryResume) runs after it was published, so one of the two always sees the other. A taker that
// takes a value waits until the Put that stored it has claimed the slot, so a late Put never
// resumes the taker's next wait (a coroutine taker could not loop over that) and never touches
// a mailbox its taker already destroyed.
//
// Destruction: when no taker is suspended and no Put is running; the taker may destroy it as
// soon as its Take returned (its re-check is over by then: SuspendableBase<Single>).
template <class T>
class Mailbox : public Suspendable<SuspensionKind::Single, Mailbox<T>>
{
public:
    Mailbox() = default;

    // Stores the value (replacing one not yet taken: then returns true) and resumes the taker.
    bool Put(T value)
    {
        bool replaced = false;
        SuspendedTask waiter;
        {
            // From before the value is stored until the waiter slot is claimed: a taker that
            // finds the value waits this out before it waits again or returns (ResumerScope).
            // The resume itself comes after, outside: a taker never waits for a wake-up call.
            const auto resuming = this->ResumerScope();
            {
                std::lock_guard guard(lock_);
                replaced = value_.has_value();
                value_ = std::move(value);
                full_.store(true); // seq_cst: the state change the taker's re-check pairs with
            }
            waiter = this->ClaimWaiter();
        }
        if (waiter)
            ResumeTask(waiter);
        return replaced;
    }

    // Takes the value if one is there. Never suspends.
    std::optional<T> TryTake()
    {
        if (!full_.load())
            return std::nullopt;
        std::optional<T> taken;
        {
            std::lock_guard guard(lock_);
            taken = std::move(value_);
            value_.reset();
            full_.store(false);
        }
        if (taken)
            this->WaitOutPublishers(); // the Put that stored it has claimed the waiter slot
        return taken;
    }

    // Suspends (task or converted thread) until a value is there, then takes it.
    T Take()
    {
        for (;;)
        {
            if (std::optional<T> taken = TryTake())
                return std::move(*taken);
            this->Suspend();
        }
    }

    // As Take, but returns std::nullopt if nothing arrived within `timeout`.
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
            if (left <= left.zero() || !this->SuspendFor(left))
                return TryTake(); // a Put may have raced the timeout
        }
    }

    // co_await box.TakeAsync(): yields the value (the coroutine continues on the executor that
    // was current when it suspended). co_await box.TakeAsync(timeout) yields std::optional<T>.
    class [[nodiscard("co_await it")]] TakeAwaiter
    {
    public:
        explicit TakeAwaiter(Mailbox & owner) noexcept : owner_(owner), inner_(owner.Callback()) {}
        bool await_ready()
        {
            return (taken_ = owner_.TryTake()).has_value();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        T await_resume()
        {
            if (!taken_)
            {
                owner_.WaitOutPublishers(); // the re-check leaves the mailbox before we go on
                taken_ = owner_.TryTake(); // only a Put resumes the one taker: it is there
            }
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
            : owner_(owner), inner_(owner.Callback(), timeout)
        {
        }
        bool await_ready()
        {
            return (taken_ = owner_.TryTake()).has_value();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        std::optional<T> await_resume()
        {
            if (!taken_)
            {
                (void)inner_.await_resume(); // settles the timer; a late Put still counts
                owner_.WaitOutPublishers();  // the re-check leaves the mailbox before we go on
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

    // Suspendable: the re-check after the taker was published.
    void TryResume() noexcept
    {
        if (full_.load())
            this->Resume();
    }

private:
    detail::SpinLock lock_;
    std::optional<T> value_;
    std::atomic<bool> full_{false};
};
} // namespace TC::Synchronization
