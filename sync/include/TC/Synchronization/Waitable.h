#pragma once
// Waitable<Kind, T>: turns a non-blocking T::TryWait() into Wait(), Wait(timeout) and co_await.

#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/SuspendableBase.h>

#include <concepts>
#include <coroutine>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
namespace detail
{
// The class a pointer to member belongs to: T for a member T declares itself, the base for one
// it inherits.
template <class MemberPointer>
struct MemberClass;
template <class R, class C>
struct MemberClass<R C::*>
{
    using Type = C;
};
} // namespace detail

// T provides a `bool TryWait()` (non-blocking; true when the waiter may pass, consuming whatever
// passing consumes) and its own `void Resume()` that resumes the waiters a successful TryWait
// stands for, both public or reachable by Waitable (a friend); the constructor checks both at
// compile time. State changes that let waiters pass must happen before T calls Resume.
//
// A resumed waiter has passed: Wait does not call TryWait again after it was resumed, so a
// resumer that hands out something (a signal, a count) must have taken it with TryWait first.
// Optionally T provides `bool Recheck()`, with TryWait's contract, for the re-check after a
// waiter was published (which otherwise calls TryWait); AutoResetEvent uses it to peek there and
// not in TryWait.
//
// Lifetime: as SuspendableBase<Kind>.
/// - Single: the waiter may destroy the object as soon as its wait returned, however it passed.
/// - Multiple: only the creator (the constructing task or converted thread) may destroy it as
///   soon as its own wait returned, suspended or not; a resumer whose state change the creator
///   can see before its Resume begins holds ResumerScope() around both. Every other waiter --
///   a task, a converted thread, a coroutine -- touches nothing of the object once resumed.
template <SuspensionKind Kind, class T>
class Waitable : public SuspendableBase<Kind>
{
public:
    // Returns at once if TryWait() succeeds; otherwise suspends until a Resume reaches this
    // waiter. From a task or a converted thread (not from a callback, not from a worker thread
    // outside a task); a coroutine uses co_await.
    void Wait()
    {
        if (Self().TryWait())
            PassedWithoutSuspending();
        else
            this->Suspend(); // Multiple: only the creator touches the object after its resume
    }

    // As Wait, but gives up after `timeout` and then returns false. Returns true when TryWait
    // succeeded or a Resume reached the waiter. Without EnableTimers, no limit.
    bool Wait(Duration timeout)
    {
        if (Self().TryWait())
        {
            PassedWithoutSuspending();
            return true;
        }
        return this->SuspendFor(timeout); // waits out what Wait does, on both outcomes
    }

    // co_await x.WaitAsync() (or co_await x): the coroutine form of Wait. It continues on the
    // executor that was current when it suspended. A coroutine is never a Multiple object's
    // creator, so for Multiple it touches nothing of the object once it passed.
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
            // Single: the one waiter may destroy the object, so it waits out the re-check.
            if constexpr (Kind == SuspensionKind::Single)
                owner_.WaitOutPublishers();
        }

    private:
        Waitable& owner_;
        SuspendAwaiter inner_;
    };

    // co_await x.WaitAsync(timeout): yields false if it timed out.
    class [[nodiscard("co_await it")]] WaitForAwaiter
    {
    public:
        WaitForAwaiter(Waitable & owner, Duration timeout) noexcept
            : owner_(owner), wait_(owner), inner_(wait_.Callback(), timeout)
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
            const bool passed = ready_ || inner_.await_resume();
            // Single: a timed-out waiter may destroy the object too. Multiple: a coroutine is
            // never the creator, and touches nothing of the object once it passed.
            if constexpr (Kind == SuspensionKind::Single)
                owner_.WaitOutPublishers();
            return passed;
        }

    private:
        Waitable& owner_;
        typename SuspendableBase<Kind>::TimedWait wait_; // what the timed wait publishes
        SuspendForAwaiter inner_;
        bool ready_ = false;
    };

    WaitAwaiter WaitAsync() noexcept { return WaitAwaiter(*this); }
    WaitForAwaiter WaitAsync(Duration timeout) noexcept
    {
        return WaitForAwaiter(*this, timeout);
    }
    WaitAwaiter operator co_await() noexcept { return WaitAwaiter(*this); }

protected:
    Waitable() noexcept
    {
        // Here T is complete: the constructor is instantiated where T's constructor is defined.
        static_assert(requires(T& t) {
            { t.TryWait() } -> std::convertible_to<bool>;
        }, "Waitable<Kind, T>: T must provide `bool TryWait()` (non-blocking: true when the "
           "waiter may pass), public or reachable by Waitable as a friend");
        static_assert(requires {
            &T::Resume;
            requires std::same_as<typename detail::MemberClass<decltype(&T::Resume)>::Type, T>;
            requires std::is_void_v<decltype(std::declval<T&>().Resume())>;
        }, "Waitable<Kind, T>: T must declare its own `void Resume()` (public, or reachable by "
           "Waitable as a friend) that resumes the waiters a successful TryWait stands for; "
           "the base class's Resume is not it");
    }

private:
    T& Self() noexcept { return static_cast<T&>(*this); }

    // A wait whose TryWait passed at once.
    void PassedWithoutSuspending() noexcept
    {
        if constexpr (Kind == SuspensionKind::Single)
            this->WaitOutPublishers(); // the waiter may destroy the object
        else
            this->WaitOutCallsIfCreator(); // the creator may destroy the object
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
