#pragma once
// detail::MarkedAwait: a Task body's co_await (await_transform): forwards to the standard's
// awaiter, marking the promise suspended before its await_suspend.

#include <TC/detail/CoroutineZone.h>

#include <concepts>
#include <coroutine>
#include <type_traits>
#include <utility>

namespace TC::detail
{
// An operand with a member operator co_await, called as the standard calls it.
template <class A>
concept HasMemberCoAwait = requires(A&& a) { std::forward<A>(a).operator co_await(); };

// An operand with a non-member operator co_await (found by argument-dependent lookup).
template <class A>
concept HasFreeCoAwait = requires(A&& a) { operator co_await(std::forward<A>(a)); };

// The standard's awaiter for operand `A` (a reference type): its operator co_await's result (by
// value), or the operand itself (by reference).
template <class A>
struct AwaiterOfOperand
{
    using Type = A;
};
template <class A>
    requires HasMemberCoAwait<A>
struct AwaiterOfOperand<A>
{
    using Type = decltype(std::declval<A>().operator co_await());
};
template <class A>
    requires(!HasMemberCoAwait<A> && HasFreeCoAwait<A>)
struct AwaiterOfOperand<A>
{
    using Type = decltype(operator co_await(std::declval<A>()));
};

// The promise side: a flag written at most once, by the coroutine that owns it.
template <class Flag>
concept SuspensionMark = requires(Flag& flag) { flag.MarkSuspended(); };

// Holds the awaiter (constructed in place: it need not move) and the promise to mark; lives in
// the frame as any awaiter.
template <class Inner, class Promise>
class MarkedAwait
{
public:
    template <class Make>
    MarkedAwait(Make&& make, Promise& promise) noexcept(noexcept(make()))
        : inner_(std::forward<Make>(make)()), promise_(promise)
    {
    }
    MarkedAwait(const MarkedAwait&) = delete;
    MarkedAwait& operator=(const MarkedAwait&) = delete;

    decltype(auto) await_ready() noexcept(noexcept(std::declval<Inner&>().await_ready()))
    {
        return inner_.await_ready();
    }

    // Marks first: once the inner await_suspend publishes, another thread may finish the
    // coroutine and read the mark.
    template <class Handle>
    decltype(auto) await_suspend(Handle awaiting) noexcept(
        noexcept(std::declval<Inner&>().await_suspend(awaiting)))
    {
        promise_.MarkSuspended();
        return inner_.await_suspend(awaiting);
    }

    decltype(auto) await_resume() noexcept(noexcept(std::declval<Inner&>().await_resume()))
    {
        if constexpr (requires { promise_.Identity(); })
            IdentifyCoroutine(&promise_.Identity());
        return inner_.await_resume();
    }

private:
    Inner inner_;
    Promise& promise_;
};

// Wraps a co_await operand, finding its awaiter as the standard does.
template <class A, SuspensionMark Promise>
auto MarkAwait(A&& operand, Promise& promise)
{
    using Inner = typename AwaiterOfOperand<A&&>::Type;
    static_assert(
        requires(std::remove_reference_t<Inner>& inner) {
            inner.await_ready();
            inner.await_resume();
        },
        "co_await in a Task needs an awaiter (await_ready, await_suspend, await_resume) or an "
        "awaitable whose operator co_await returns one");
    return MarkedAwait<Inner, Promise>(
        [&]() -> Inner
        {
            if constexpr (HasMemberCoAwait<A&&>)
                return std::forward<A>(operand).operator co_await();
            else if constexpr (HasFreeCoAwait<A&&>)
                return operator co_await(std::forward<A>(operand));
            else
                return std::forward<A>(operand);
        },
        promise);
}
} // namespace TC::detail
