#pragma once
// Waitable<Kind, T>: turns a non-blocking T::TryWait() into Wait(), Wait(timeout) and co_await.

#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/SuspendableBase.h>

#include <coroutine>

namespace TC::Synchronization
{
// T provides a public `bool TryWait()` (non-blocking; true when the waiter may pass, consuming
// whatever passing consumes) and a public `void Resume()` that resumes the waiters a successful
// TryWait stands for. State changes that let waiters pass must happen before T calls Resume.
//
// A resumed waiter has passed: Wait does not call TryWait again after it was resumed, so a
// resumer that hands out something (a signal, a count) must have taken it with TryWait first.
// Optionally T provides `bool Recheck()`, with TryWait's contract, for the re-check after a
// waiter was published (which otherwise calls TryWait); AutoResetEvent uses it to peek there and
// not in TryWait. Optionally T provides `void AfterWait()`: Wait, Wait(timeout) (when it passed)
// and co_await call it once the waiter has passed, however it passed; Latch and WaitGroup use it to
// wait out a resumer that is still inside the object, so that any waiter may destroy them after its
// wait. Lifetime: as SuspendableBase<Kind> -- for Multiple, the constructing task or thread is
// resumed last, and may destroy the object when its Wait returns once no other Resume is running.
template <SuspensionKind Kind, class T>
class Waitable : public SuspendableBase<Kind>
{
public:
    // Returns at once if TryWait() succeeds; otherwise suspends until a Resume reaches this
    // waiter. From a task or a converted thread (not from a callback, not from a worker thread
    // outside a task); a coroutine uses co_await.
    void Wait()
    {
        if (!Self().TryWait())
            this->Suspend();
        AfterWait(Self());
    }

    // Single only: as Wait, but gives up after `timeout` and then returns false. Returns true
    // when TryWait succeeded or a Resume reached the waiter. Without EnableTimers, no limit.
    bool Wait(Duration timeout) requires(Kind == SuspensionKind::Single)
    {
        if (!Self().TryWait() && !this->SuspendFor(timeout))
            return false;
        AfterWait(Self());
        return true;
    }

    // co_await x.WaitAsync() (or co_await x): the coroutine form of Wait. It continues on the
    // executor that was current when it suspended (inline on the resuming thread if none).
    class [[nodiscard("co_await it")]] WaitAwaiter
    {
    public:
        explicit WaitAwaiter(Waitable & owner) noexcept : owner_(owner), inner_(owner.Callback()) {}
        bool await_ready()
        {
            return owner_.Self().TryWait();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        void await_resume()
        {
            AfterWait(owner_.Self());
        }

    private:
        Waitable& owner_;
        SuspendAwaiter inner_;
    };

    // co_await x.WaitAsync(timeout): yields false if it timed out. Single only.
    class [[nodiscard("co_await it")]] WaitForAwaiter
    {
    public:
        WaitForAwaiter(Waitable & owner, Duration timeout) noexcept
            : owner_(owner), inner_(owner.Callback(), timeout)
        {
        }
        bool await_ready()
        {
            ready_ = owner_.Self().TryWait();
            return ready_;
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        bool await_resume()
        {
            if (!ready_ && !inner_.await_resume())
            {
                owner_.WaitOutPublishers(); // a timed-out waiter may destroy the object too
                return false;
            }
            AfterWait(owner_.Self());
            return true;
        }

    private:
        Waitable& owner_;
        SuspendForAwaiter inner_;
        bool ready_ = false;
    };

    WaitAwaiter WaitAsync() noexcept { return WaitAwaiter(*this); }
    WaitForAwaiter WaitAsync(Duration timeout) noexcept requires(Kind == SuspensionKind::Single)
    {
        return WaitForAwaiter(*this, timeout);
    }
    WaitAwaiter operator co_await() noexcept { return WaitAwaiter(*this); }

protected:
    Waitable() noexcept = default;

private:
    T& Self() noexcept { return static_cast<T&>(*this); }

    static void AfterWait(T& self)
    {
        // Every path that passed -- suspended or not -- waits out the re-checks in flight, so a
        // waiter that may destroy the object finds none running (SuspendableBase).
        self.WaitOutPublishers();
        if constexpr (requires { self.AfterWait(); })
            self.AfterWait();
    }

    // The re-check after publishing: if the waiter may pass now, T::Resume resumes it (or
    // another waiter the success stands for).
    void OnPublished() noexcept final
    {
        if (Recheck(Self()))
            Self().Resume();
    }

    static bool Recheck(T& self) noexcept
    {
        // The re-check after publishing: T::Recheck where T has one, else TryWait.
        if constexpr (requires { self.Recheck(); })
            return self.Recheck();
        else
            return self.TryWait();
    }
};
} // namespace TC::Synchronization
