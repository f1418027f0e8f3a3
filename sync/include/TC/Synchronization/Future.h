#pragma once
// Future<T> and Promise<T>: a one-shot value (or exception) handed from one producer to one
// consumer, waitable from a task, a converted thread and a coroutine, and chainable with Then.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
template <class T>
class Future;
template <class T>
class Promise;

namespace detail
{
// The value a Future<void> carries.
struct FutureUnit
{
};

template <class T>
using FutureValue = std::conditional_t<std::is_void_v<T>, FutureUnit, T>;

// The shared state's one atomic word. Besides the constants it holds the address of the one
// suspended waiter's SuspendedTaskEntry, or the address of a continuation with kFutureThenTag
// set. Entries and continuations are at least 8-byte aligned, so no address collides with a
// constant or carries the tag by accident.
inline constexpr std::uintptr_t kFutureEmpty = 0;     // unresolved, nobody waiting
inline constexpr std::uintptr_t kFutureResolved = 1;  // value or exception stored; producer gone
inline constexpr std::uintptr_t kFutureAbandoned = 2; // unresolved, the consumer is gone
inline constexpr std::uintptr_t kFutureThenTag = 4;

// What Then attaches to a state instead of a waiter. Run is called once the state is resolved,
// owns the consumer side of that state from then on, and returns the next continuation that
// became runnable (its own downstream one), so long chains resolve in a loop, not by recursion.
class FutureContinuation
{
public:
    virtual FutureContinuation* Run() noexcept = 0;

    static void RunAll(FutureContinuation* continuation) noexcept
    {
        while (continuation)
            continuation = continuation->Run();
    }

protected:
    FutureContinuation() = default;
    FutureContinuation(const FutureContinuation&) = default;
    FutureContinuation& operator=(const FutureContinuation&) = default;
    ~FutureContinuation() = default;
};

// The state one Promise and one Future share. Ownership is settled by the word alone, without a
// reference count: the producer leaves with the exchange that stores kFutureResolved, the
// consumer leaves either after seeing kFutureResolved (then it frees the state) or by storing
// kFutureAbandoned (then the producer frees it when it resolves). So each side's last access is
// one atomic operation and nothing dangles whichever side goes first.
class FutureStateBase
{
public:
    FutureStateBase() = default;
    FutureStateBase(const FutureStateBase&) = delete;
    FutureStateBase& operator=(const FutureStateBase&) = delete;
    virtual ~FutureStateBase() = default;

    // acquire: a consumer that sees kFutureResolved reads the value the producer stored.
    bool IsResolved() const noexcept
    {
        return word_.load(std::memory_order_acquire) == kFutureResolved;
    }

    // acquire: the consumer's last access happens before the producer frees the state.
    bool ConsumerGone() const noexcept
    {
        return word_.load(std::memory_order_acquire) == kFutureAbandoned;
    }

    // Producer side, after the value or exception is stored: publishes it and hands the waiter
    // or continuation over. One RMW; the producer touches nothing of the state afterwards.
    // Returns the continuation to run (the caller runs it, see FutureContinuation::RunAll).
    [[nodiscard]] FutureContinuation* Publish() noexcept
    {
        // acq_rel: release the value to the consumer; acquire the waiter's or continuation's
        // publication, or the abandoning consumer's last accesses before we free the state.
        const std::uintptr_t previous = word_.exchange(kFutureResolved, std::memory_order_acq_rel);
        if (previous == kFutureEmpty)
            return nullptr;
        if (previous == kFutureAbandoned)
        {
            delete this; // the value is dropped with the state
            return nullptr;
        }
        TC_CHECK(previous != kFutureResolved, "promise resolved twice",
                 "a Future's shared state was published a second time");
        if (previous & kFutureThenTag)
            return reinterpret_cast<FutureContinuation*>(previous & ~kFutureThenTag);
        ResumeTask(SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(previous)));
        return nullptr;
    }

    // Consumer side, when it is done with the state (value taken, or Future destroyed).
    void ReleaseConsumer() noexcept
    {
        // Resolved: the producer has left, so no RMW is needed to free the state.
        if (IsResolved())
        {
            delete this;
            return;
        }
        // acq_rel: release our accesses to the producer that frees; acquire its value if it
        // resolved meanwhile and we free.
        const std::uintptr_t previous = word_.exchange(kFutureAbandoned, std::memory_order_acq_rel);
        TC_CHECK(previous == kFutureEmpty || previous == kFutureResolved,
                 "Future destroyed while waited on",
                 "a Future's state was released while a waiter or continuation was attached");
        if (previous == kFutureResolved)
            delete this;
    }

    // Attaches a continuation; false if the state is already resolved (the caller then runs the
    // continuation itself). One RMW.
    bool Attach(FutureContinuation* continuation) noexcept
    {
        std::uintptr_t expected = kFutureEmpty;
        const auto tagged = reinterpret_cast<std::uintptr_t>(continuation) | kFutureThenTag;
        // release: publishes the continuation's fields to the producer that runs it; acquire on
        // failure: the caller then reads the value.
        if (word_.compare_exchange_strong(expected, tagged, std::memory_order_release,
                                          std::memory_order_acquire))
            return true;
        TC_CHECK(expected == kFutureResolved, "Future consumed twice",
                 "Then or a wait was attached to a Future that already has a waiter");
        return false;
    }

    // The waiter's callback: publishes the suspended waiter in the word, or resumes it at once
    // when the state was resolved in the meantime. No mutex, no retry loop: one CAS decides.
    class Waiter final : public ISuspendCallback
    {
    public:
        explicit Waiter(FutureStateBase& state) noexcept : state_(state) {}

        void OnSuspended(SuspendedTask task) noexcept override
        {
            std::uintptr_t expected = kFutureEmpty;
            // release: publishes the waiter to the producer; acquire on failure so the waiter,
            // resumed by us below, reads the value.
            if (state_.word_.compare_exchange_strong(
                    expected, reinterpret_cast<std::uintptr_t>(task.Entry()),
                    std::memory_order_release, std::memory_order_acquire))
                return; // the last access: the producer owns the handle now
            TC_CHECK(expected == kFutureResolved, "one waiter at a time on a Future",
                     "a second waiter (or a Then) was attached to a Future that has a waiter");
            ResumeTask(task); // never published: ours to resume
        }

        bool OnTimeout(SuspendedTask task) noexcept override
        {
            auto expected = reinterpret_cast<std::uintptr_t>(task.Entry());
            // acq_rel: claims the waiter back against the producer's exchange.
            return state_.word_.compare_exchange_strong(
                expected, kFutureEmpty, std::memory_order_acq_rel, std::memory_order_relaxed);
        }

    private:
        FutureStateBase& state_;
    };

    std::exception_ptr error_;

private:
    std::atomic<std::uintptr_t> word_{kFutureEmpty};

    template <class>
    friend class ::TC::Synchronization::Promise;
    void MarkResolvedExclusive() noexcept
    {
        // relaxed: no consumer exists yet; handing the state to one (GetFuture) is a plain move
        // within the producer's thread, and the Future's later acquire loads see this store.
        word_.store(kFutureResolved, std::memory_order_relaxed);
    }
};

template <class T>
class FutureState : public FutureStateBase
{
public:
    template <class... Args>
    void Emplace(Args&&... args)
    {
        value_.emplace(std::forward<Args>(args)...);
    }

    // The consumer's take: rethrows the stored exception, or moves the value out.
    FutureValue<T> TakeValue()
    {
        if (error_)
            std::rethrow_exception(error_);
        return std::move(*value_);
    }

    std::optional<FutureValue<T>> value_;
};

// How Then maps f's result: a Future<V> is flattened into V.
template <class R>
struct FutureFlatten
{
    using Type = R;
    static constexpr bool kFlatten = false;
};
template <class V>
struct FutureFlatten<Future<V>>
{
    using Type = V;
    static constexpr bool kFlatten = true;
};

template <class F, class T>
struct ThenInvoke
{
    using Result = std::invoke_result_t<F, T&&>;
};
template <class F>
struct ThenInvoke<F, void>
{
    using Result = std::invoke_result_t<F>;
};

// The state Then returns, which is also the continuation attached to the source. When f
// returns a future it attaches itself a second time, to that inner future (inner_ != nullptr
// marks that phase: seed 001's ChainPromiseNode).
template <class T, class F>
class ThenState final
    : public FutureState<typename FutureFlatten<typename ThenInvoke<F, T>::Result>::Type>,
      public FutureContinuation
{
    using Result = typename ThenInvoke<F, T>::Result;
    using U = typename FutureFlatten<Result>::Type;
    static constexpr bool kFlatten = FutureFlatten<Result>::kFlatten;

public:
    template <class G>
    ThenState(FutureState<T>* source, G&& fn) : source_(source), fn_(std::forward<G>(fn))
    {
    }

    FutureContinuation* Run() noexcept override
    {
        if constexpr (kFlatten)
        {
            if (inner_)
                return Forward();
        }
        FutureState<T>* source = source_;
        try
        {
            if (source->error_)
            {
                this->error_ = source->error_;
                source->ReleaseConsumer();
            }
            else
            {
                struct ReleaseSource
                {
                    FutureState<T>* state;
                    ~ReleaseSource() { state->ReleaseConsumer(); }
                } release{source};
                if constexpr (kFlatten)
                {
                    Future<U> next = Call(source);
                    if (!next.Valid())
                        throw std::future_error(std::future_errc::no_state);
                    inner_ = next.Detach();
                }
                else if constexpr (std::is_void_v<U>)
                {
                    Call(source);
                    this->Emplace();
                }
                else
                {
                    this->Emplace(Call(source));
                }
            }
        }
        catch (...)
        {
            this->error_ = std::current_exception();
        }
        fn_.reset();
        if constexpr (kFlatten)
        {
            if (inner_)
            {
                if (inner_->Attach(this))
                    return nullptr; // the inner producer runs us again; touch nothing more
                return Forward();
            }
        }
        return this->Publish();
    }

private:
    auto Call(FutureState<T>* source)
    {
        if constexpr (std::is_void_v<T>)
            return std::invoke(std::move(*fn_));
        else
            return std::invoke(std::move(*fn_), std::move(*source->value_));
    }

    // Second phase of a flattening Then: the inner future resolved; pass its outcome on.
    FutureContinuation* Forward() noexcept
    {
        FutureState<U>* inner = inner_;
        try
        {
            if (inner->error_)
                this->error_ = inner->error_;
            else
                this->value_ = std::move(inner->value_);
        }
        catch (...)
        {
            this->error_ = std::current_exception();
        }
        inner->ReleaseConsumer();
        return this->Publish();
    }

    FutureState<T>* source_;
    std::optional<std::decay_t<F>> fn_;
    FutureState<U>* inner_ = nullptr;
};
} // namespace detail

// The consumer end: a value of type T (or void) that a Promise supplies once.
//
// A Future is move-only and has one consumer: one wait at a time, then Wait(), co_await or Then
// consumes it and leaves it empty (Valid() false). It may be destroyed at any time -- before the
// value arrives (the value is then dropped when the producer supplies it) or after.
//
// Cost: the state is one heap block shared with the Promise, freed by whichever side leaves
// last. A resolve followed by a wait that finds the value is one RMW in all; a wait that must
// suspend adds one (the compare-exchange that publishes the waiter).
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

    // True once the value or exception is there; Wait will not suspend. Never blocks.
    // Precondition: Valid().
    bool IsReady() const noexcept
    {
        return state_->IsResolved();
    }

    // Waits until the Promise supplies a value or an exception (or is destroyed unresolved),
    // then returns the value or rethrows the exception -- std::future_error with
    // std::future_errc::broken_promise for a Promise destroyed unresolved. Consumes the Future.
    // From a task it suspends the task; from a converted thread (any thread that is not a
    // scheduler worker running a coroutine) it blocks the thread, and a thread that hosts a
    // scheduler keeps running that scheduler's work meanwhile. Coroutines co_await instead.
    // Throws std::future_error(no_state) if !Valid().
    T Wait()
    {
        CheckValid();
        WaitUntilResolved();
        return Take();
    }

    // Waits like Wait but without consuming, for at most `timeout` (no limit without
    // EnableTimers). True if the value or exception is there; false on timeout. Same callers.
    bool WaitFor(Duration timeout)
    {
        CheckValid();
        if (state_->IsResolved())
            return true;
        typename State::Waiter waiter(*state_);
        SuspendTaskFor(&waiter, timeout);
        // Decided by the word, not the return value: a timeout that lost the race to the
        // producer still finds the value.
        return state_->IsResolved();
    }

    // co_await future: yields the value (or rethrows), consuming the Future. The coroutine
    // continues on the executor that was current when it suspended, or inline on the resolving
    // thread when there was none. The Future must outlive the co_await expression.
    // Throws std::future_error(no_state) if !Valid().
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

    // Attaches f to run once the value is there and returns a Future of f's result: T -> U,
    // void -> U, T -> void and void -> void; when f returns a Future<V>, the result is a
    // Future<V> that resolves with that inner future (flattened). f runs on the thread that
    // supplies the value (inline, inside SetValue), or at once on the calling thread when the
    // value is already there; it must not wait. An exception stored in this Future skips f and
    // passes on; an exception thrown by f is stored in the returned Future. Consumes this Future.
    // Throws std::future_error(no_state) if !Valid(), or what allocating the continuation throws
    // (this Future is then unchanged).
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

    // A Future that is ready at once with an exception; std::invalid_argument if `error` is null.
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
        // Templated so the kernel sees the promise type (an unowned chain's root, if it names one).
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

// The producer end: supplies the value or exception of its Future, once.
//
// Move-only; one object is used by one thread at a time, but it may be moved to and resolved
// from any thread, concurrently with the consumer waiting, attaching Then or destroying the
// Future. Resolving never blocks: it stores the value, then one exchange hands it to the waiter,
// which it resumes (a task queued on its scheduler -- a worker's own queue when the worker
// resolves, no cross-thread queue -- a thread woken, a coroutine submitted to its executor), or
// runs the attached Then continuation inline. If the Future is already gone the value is
// dropped. Destroying an unresolved Promise whose Future was retrieved resolves it with
// std::future_error(std::future_errc::broken_promise).
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

    // The Future of this Promise; once. Throws std::future_error: future_already_retrieved on a
    // second call, no_state on a moved-from Promise.
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

    // Supplies the value (constructed from args; no args for Promise<void>). Any thread; never
    // blocks. Throws std::future_error(promise_already_satisfied) if already resolved, or what
    // constructing the value throws (the Promise then stays unresolved).
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

    // Supplies an exception instead of a value. As SetValue; a null `error` throws
    // std::invalid_argument and leaves the Promise unresolved (the Future would carry neither a
    // value nor an exception).
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
