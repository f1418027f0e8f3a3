#pragma once
// Waitable<Kind, T>: turns a non-blocking T::TryWait() into Wait(), Wait(timeout) and co_await.
//   class Gate : public Waitable<SuspensionKind::Multiple, Gate>
//   { public: bool TryWait(); void Resume(); };

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
// The class a pointer to member belongs to (T, or the base that declares it).
template <class MemberPointer>
struct MemberClass;
template <class R, class C>
struct MemberClass<R C::*>
{
    using Type = C;
};
} // namespace detail

// T provides `bool TryWait()` (non-blocking; true: pass, consuming) and `void Resume()` resuming
// the waiters a successful TryWait stands for; checked at compile time.
/// - State changes that let waiters pass happen before T calls Resume.
/// - A resumed waiter has passed (no second TryWait): a resumer handing something out took it
///   with TryWait first.
/// - Optional `bool Recheck()` (TryWait's contract) replaces TryWait in the post-publish re-check.
/// - Single: the waiter may destroy the object as soon as its wait returned.
/// - Multiple: only the creator may, once its own wait returned; a resumer whose state change it
///   can see before Resume holds ResumerScope() around both. Other waiters touch nothing once
///   resumed.
template <SuspensionKind Kind, class T>
class Waitable : public SuspendableBase<Kind>
{
public:
    // Passes if TryWait() does, else suspends until resumed. Task or converted thread only.
    void Wait()
    {
        if (Self().TryWait())
            PassedWithoutSuspending();
        else
            this->Suspend();
    }

    // Wait; false on timeout (no limit without EnableTimers).
    bool Wait(Duration timeout)
    {
        if (Self().TryWait())
        {
            PassedWithoutSuspending();
            return true;
        }
        return this->SuspendFor(timeout);
    }

    // co_await x / x.WaitAsync(): resumes on the executor current at suspension.
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
            // Single: the waiter may destroy the object: wait out the re-check.
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
            // Single: a timed-out waiter may destroy it too; a Multiple coroutine touches nothing.
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
        // T is complete here.
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

    // The re-check after publishing; T::Resume resumes a waiter that may pass.
    void OnPublished() noexcept final
    {
        if (Recheck(Self()))
            Self().Resume();
    }

    static bool Recheck(T& self) noexcept
    {
        if constexpr (requires { self.Recheck(); })
            return self.Recheck();
        else
            return self.TryWait();
    }
};
} // namespace TC::Synchronization
