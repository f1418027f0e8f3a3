#pragma once
// Future<T> and Promise<T>: a one-shot value (or exception) handed from one producer to one
// consumer, waitable from a task, a converted thread and a coroutine, and chainable with Then.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/detail/FutureState.h>
#include <TC/Synchronization/detail/FutureThen.h>

#include <coroutine>
#include <exception>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
/// ```cpp
/// auto [future, promise] = MakeFuture<int>();
/// Start([p = std::move(promise)]() mutable { p.SetValue(42); });  int v = future.Wait();
/// ```
/// - The consumer end: move-only, one consumer, one wait at a time; Wait(), co_await or Then
///   consumes it (Valid() false after).
/// - May be destroyed any time; a value supplied after that is dropped.
/// - One heap block shared with the Promise; resolve plus a passing wait is one RMW.
template <class T>
class [[nodiscard("a Future carries a result or an exception; wait on it or Then it")]] Future
{
    static_assert(!std::is_reference_v<T>, "Future<T&> is not supported; use a pointer");
    using State = detail::FutureState<T>;

public:
    using ValueType = T;

    Future() noexcept = default;
    Future(Future && other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    Future& operator=(Future&& other) noexcept
    {
        if (this != &other)
        {
            Reset();
            state_ = std::exchange(other.state_, nullptr);
        }
        return *this;
    }
    ~Future()
    {
        Reset();
    }

    // False for a default-constructed, moved-from or consumed Future.
    bool Valid() const noexcept
    {
        return state_ != nullptr;
    }

    // True once the value or exception is there. Never blocks. Precondition: Valid().
    bool IsReady() const noexcept
    {
        return state_->IsResolved();
    }

    /// Returns the value or rethrows the exception; consumes the Future.
    /// - A Promise destroyed unresolved: std::future_error(broken_promise).
    /// - Suspends a task; blocks a converted thread (a host thread keeps running its
    ///   scheduler's work). Coroutines co_await instead.
    /// - std::future_error(no_state) if !Valid().
    T Wait()
    {
        CheckValid();
        WaitUntilResolved();
        return Take();
    }

    // As Wait without consuming, for at most `timeout` (no limit without EnableTimers): true if
    // the value or exception is there, false on timeout.
    bool WaitFor(Duration timeout)
    {
        CheckValid();
        if (state_->IsResolved())
            return true;
        typename State::Waiter waiter(*state_);
        SuspendTaskFor(&waiter, timeout);
        // The word decides: a timeout that lost to the producer still finds the value.
        return state_->IsResolved();
    }

    // WaitFor, named like the other primitives' timed waits.
    bool Wait(Duration timeout)
    {
        return WaitFor(timeout);
    }

    class WaitForAwaiter;
    // co_await future.WaitAsync(timeout): Wait(timeout) for coroutines; consumes nothing.
    WaitForAwaiter WaitAsync(Duration timeout)
    {
        CheckValid();
        return WaitForAwaiter(*this, timeout);
    }

    /// co_await future: yields the value (or rethrows), consuming the Future.
    /// - Resumes on the executor current when it suspended, else inline on the resolving thread.
    /// - For both co_await forms: the Future must outlive the co_await expression;
    ///   std::future_error(no_state) if !Valid().
    auto operator co_await()&
    {
        CheckValid();
        return Awaiter(*this);
    }
    auto operator co_await()&&
    {
        CheckValid();
        return Awaiter(*this);
    }

    /// Runs f on the value and returns a Future of its result; consumes this Future.
    /// - T or void -> U or void; f returning Future<V> gives Future<V> (flattened).
    /// - f runs inline inside SetValue on the resolving thread, or at once here if ready; it
    ///   must not wait.
    /// - A stored exception skips f and passes on; f's exception goes to the returned Future.
    /// - std::future_error(no_state) if !Valid(); an allocation failure leaves this unchanged.
    template <class F>
    auto Then(F && fn)
    {
        CheckValid();
        using Node = detail::ThenState<T, std::decay_t<F>>;
        using U = typename detail::FutureFlatten<
            typename detail::ThenInvoke<std::decay_t<F>, T>::Result>::Type;
        auto* node = new Node(state_, std::forward<F>(fn));
        State* source = std::exchange(state_, nullptr);
        Future<U> result(static_cast<detail::FutureState<U>*>(node));
        if (!source->Attach(node))
            detail::FutureContinuation::RunAll(node);
        return result;
    }

    // A Future that is ready at once with `value` (no Promise involved).
    template <class... Args>
    static Future FromValue(Args && ... args)
    {
        auto* state = new State;
        try
        {
            state->Emplace(std::forward<Args>(args)...);
        }
        catch (...)
        {
            delete state;
            throw;
        }
        (void)state->Publish(); // no waiter, no continuation: returns nullptr
        return Future(state);
    }

    // Ready at once with an exception; std::invalid_argument if `error` is null.
    static Future FromException(std::exception_ptr error)
    {
        if (!error)
            throw std::invalid_argument("TC::Future::FromException: a null exception_ptr");
        auto* state = new State;
        state->error_ = std::move(error);
        (void)state->Publish();
        return Future(state);
    }

private:
    template <class>
    friend class Future;
    template <class>
    friend class Promise;
    template <class, class>
    friend class detail::ThenState;

    explicit Future(State * state) noexcept : state_(state) {}

    State* Detach() noexcept
    {
        return std::exchange(state_, nullptr);
    }

    void Reset() noexcept
    {
        if (State* state = std::exchange(state_, nullptr))
            state->ReleaseConsumer();
    }

    void CheckValid() const
    {
        if (!state_)
            throw std::future_error(std::future_errc::no_state);
    }

    void WaitUntilResolved()
    {
        if (state_->IsResolved())
            return;
        typename State::Waiter waiter(*state_);
        SuspendTask(&waiter);
        TC_CHECK(state_->IsResolved(), "Future waiter resumed early",
                 "a Future's waiter was resumed before its value was published");
    }

    T Take()
    {
        struct Release
        {
            State* state;
            ~Release() { state->ReleaseConsumer(); }
        } release{Detach()};
        if constexpr (std::is_void_v<T>)
            release.state->TakeValue();
        else
            return release.state->TakeValue();
    }

    class [[nodiscard("co_await it")]] Awaiter
    {
    public:
        explicit Awaiter(Future & future) noexcept
            : future_(future), waiter_(*future.state_), inner_(&waiter_)
        {
        }
        bool await_ready() const noexcept
        {
            return future_.IsReady();
        }
        // Templated: the kernel sees the promise type.
        template <class CoroutinePromise>
        bool await_suspend(std::coroutine_handle<CoroutinePromise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        T await_resume()
        {
            return future_.Take();
        }

    private:
        Future& future_;
        typename State::Waiter waiter_;
        SuspendAwaiter inner_;
    };

    State* state_ = nullptr;
};

template <class T>
class [[nodiscard("co_await it")]] Future<T>::WaitForAwaiter
{
public:
    WaitForAwaiter(Future & future, Duration timeout) noexcept
        : future_(future), waiter_(*future.state_), inner_(&waiter_, timeout)
    {
    }
    bool await_ready() noexcept
    {
        return ready_ = future_.IsReady();
    }
    template <class CoroutinePromise>
    bool await_suspend(std::coroutine_handle<CoroutinePromise> handle) noexcept
    {
        return inner_.await_suspend(handle);
    }
    bool await_resume() noexcept
    {
        if (!ready_)
            (void)inner_.await_resume(); // settles the timer; the word decides, as in WaitFor
        return future_.IsReady();
    }

private:
    Future& future_;
    typename State::Waiter waiter_;
    SuspendForAwaiter inner_;
    bool ready_ = false;
};

// The producer end: supplies the value or exception of its Future, once.
/// - Move-only; used by one thread at a time, resolvable from any thread concurrently with the
///   consumer waiting, attaching Then or destroying the Future.
/// - Resolving never blocks: it resumes the waiter (task, thread or coroutine on its executor)
///   or runs the Then continuation inline; if the Future is gone the value is dropped.
/// - Destroyed unresolved after GetFuture: resolves with std::future_error(broken_promise).
template <class T>
class Promise
{
    static_assert(!std::is_reference_v<T>, "Promise<T&> is not supported; use a pointer");
    using State = detail::FutureState<T>;

public:
    Promise() : state_(new State) {}
    Promise(Promise&& other) noexcept
        : state_(std::exchange(other.state_, nullptr)),
          retrieved_(std::exchange(other.retrieved_, false)),
          satisfied_(std::exchange(other.satisfied_, false))
    {
    }
    Promise& operator=(Promise&& other) noexcept
    {
        if (this != &other)
        {
            Abandon();
            state_ = std::exchange(other.state_, nullptr);
            retrieved_ = std::exchange(other.retrieved_, false);
            satisfied_ = std::exchange(other.satisfied_, false);
        }
        return *this;
    }
    ~Promise() { Abandon(); }

    // Its Future, once. std::future_error: future_already_retrieved again, no_state moved-from.
    Future<T> GetFuture()
    {
        if (retrieved_)
            throw std::future_error(std::future_errc::future_already_retrieved);
        if (!state_)
            throw std::future_error(std::future_errc::no_state);
        retrieved_ = true;
        State* state = state_;
        if (satisfied_)
            state_ = nullptr; // resolved before anyone asked: the Future owns it alone now
        return Future<T>(state);
    }

    // Supplies the value (from args; none for void). Any thread; never blocks. Throws
    // future_error(promise_already_satisfied), or what construction throws (stays unresolved).
    template <class... Args>
    void SetValue(Args&&... args)
    {
        State* state = Claim();
        if (retrieved_ && state->ConsumerGone())
        {
            Finish(); // nobody will read it: drop the value without constructing it
            delete state;
            return;
        }
        state->Emplace(std::forward<Args>(args)...);
        Resolve(state);
    }

    // As SetValue with an exception; null `error`: std::invalid_argument, stays unresolved.
    void SetException(std::exception_ptr error)
    {
        State* state = Claim();
        if (!error)
            throw std::invalid_argument("TC::Promise::SetException: a null exception_ptr");
        state->error_ = std::move(error);
        Resolve(state);
    }

    // True until the Promise is resolved (or moved from).
    bool Valid() const noexcept { return state_ != nullptr && !satisfied_; }

private:
    State* Claim()
    {
        if (satisfied_)
            throw std::future_error(std::future_errc::promise_already_satisfied);
        if (!state_)
            throw std::future_error(std::future_errc::no_state);
        return state_;
    }

    void Finish() noexcept
    {
        satisfied_ = true;
        if (retrieved_)
            state_ = nullptr;
    }

    void Resolve(State* state) noexcept
    {
        Finish();
        if (!retrieved_)
        {
            state->MarkResolvedExclusive(); // kept until GetFuture or destruction
            return;
        }
        detail::FutureContinuation::RunAll(state->Publish());
    }

    void Abandon() noexcept
    {
        State* state = std::exchange(state_, nullptr);
        if (!state)
            return;
        if (!retrieved_)
        {
            delete state; // nobody else ever saw it
            return;
        }
        if (state->ConsumerGone())
        {
            delete state;
            return;
        }
        state->error_ =
            std::make_exception_ptr(std::future_error(std::future_errc::broken_promise));
        detail::FutureContinuation::RunAll(state->Publish());
    }

    State* state_;
    bool retrieved_ = false;
    bool satisfied_ = false;
};

// Makes a connected pair: `auto [future, promise] = MakeFuture<int>();`.
template <class T>
std::pair<Future<T>, Promise<T>> MakeFuture()
{
    Promise<T> promise;
    Future<T> future = promise.GetFuture();
    return {std::move(future), std::move(promise)};
}
} // namespace TC::Synchronization
