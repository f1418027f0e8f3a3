#pragma once
// FutureState: what one Promise and one Future share: one atomic word, the waiter callback
// that publishes a suspended waiter in it, and the continuation Then attaches.

#include <TC/Checked.h>
#include <TC/ISuspendCallback.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
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

// The word: a constant, the waiter's entry, or a continuation | kFutureThenTag (8-aligned).
inline constexpr std::uintptr_t kFutureEmpty = 0;     // unresolved, nobody waiting
inline constexpr std::uintptr_t kFutureResolved = 1;  // value or exception stored; producer gone
inline constexpr std::uintptr_t kFutureAbandoned = 2; // unresolved, the consumer is gone
inline constexpr std::uintptr_t kFutureThenTag = 4;

// What Then attaches instead of a waiter: Run, once resolved, owns the consumer side and
// returns the next continuation to run.
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

// Owned through the word: each side's last access is one atomic operation; the second frees.
class FutureStateBase
{
public:
    FutureStateBase() = default;
    FutureStateBase(const FutureStateBase&) = delete;
    FutureStateBase& operator=(const FutureStateBase&) = delete;
    virtual ~FutureStateBase() = default;

    // acquire: a consumer seeing kFutureResolved reads the value.
    bool IsResolved() const noexcept
    {
        return word_.load(std::memory_order_acquire) == kFutureResolved;
    }

    // acquire: the consumer's last access precedes the producer's free.
    bool ConsumerGone() const noexcept
    {
        return word_.load(std::memory_order_acquire) == kFutureAbandoned;
    }

    // Producer, value stored: publishes it and takes the waiter or continuation in one RMW,
    // then touches nothing; returns the continuation to run.
    [[nodiscard]] FutureContinuation* Publish() noexcept
    {
        // acq_rel: release the value; acquire the waiter, continuation or abandonment.
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

    // Consumer, done with the state (value taken, or Future destroyed).
    void ReleaseConsumer() noexcept
    {
        // Resolved: the producer has left; no RMW needed.
        if (IsResolved())
        {
            delete this;
            return;
        }
        // acq_rel: release our accesses to a freeing producer; acquire its value if we free.
        const std::uintptr_t previous = word_.exchange(kFutureAbandoned, std::memory_order_acq_rel);
        TC_CHECK(previous == kFutureEmpty || previous == kFutureResolved,
                 "Future destroyed while waited on",
                 "a Future's state was released while a waiter or continuation was attached");
        if (previous == kFutureResolved)
            delete this;
    }

    // Attaches a continuation; false if already resolved (the caller runs it). One RMW.
    bool Attach(FutureContinuation* continuation) noexcept
    {
        std::uintptr_t expected = kFutureEmpty;
        const auto tagged = reinterpret_cast<std::uintptr_t>(continuation) | kFutureThenTag;
        // release: the continuation's fields; acquire on failure: the value.
        if (word_.compare_exchange_strong(expected, tagged, std::memory_order_release,
                                          std::memory_order_acquire))
            return true;
        TC_CHECK(expected == kFutureResolved, "Future consumed twice",
                 "Then or a wait was attached to a Future that already has a waiter");
        return false;
    }

    // The waiter's callback: one CAS publishes the waiter, or resumes it if resolved.
    class Waiter final : public ISuspendCallback
    {
    public:
        explicit Waiter(FutureStateBase& state) noexcept : state_(state) {}

        void OnSuspended(SuspendedTask task) noexcept override
        {
            std::uintptr_t expected = kFutureEmpty;
            // release: publishes the waiter; acquire on failure: the value.
            if (state_.word_.compare_exchange_strong(
                    expected, reinterpret_cast<std::uintptr_t>(task.Entry()),
                    std::memory_order_release, std::memory_order_acquire))
                return; // last access: the producer owns the handle
            TC_CHECK(expected == kFutureResolved, "one waiter at a time on a Future",
                     "a second waiter (or a Then) was attached to a Future that has a waiter");
            ResumeTask(task); // never published: ours to resume
        }

        bool OnTimeout(SuspendedTask task) noexcept override
        {
            auto expected = reinterpret_cast<std::uintptr_t>(task.Entry());
            // acq_rel: claims the waiter back against the producer.
            return state_.word_.compare_exchange_strong(
                expected, kFutureEmpty, std::memory_order_acq_rel, std::memory_order_relaxed);
        }

        WaitTarget WaitedOn() const noexcept override
        {
            return {&state_, &typeid(FutureStateBase), "TC::Synchronization::Future"};
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
        // relaxed: no consumer yet.
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
} // namespace detail
} // namespace TC::Synchronization
