#pragma once
// The concepts through which TC::strands' await_suspends read the promise.

#include <TC/Strands/StopToken.h>

#include <concepts>
#include <coroutine>

namespace TC::Strands
{
// Something co_await can use directly.
template <class A>
concept Awaiter = requires(A a, std::coroutine_handle<> h) {
    { a.await_ready() } -> std::convertible_to<bool>;
    a.await_suspend(h);
    a.await_resume();
};

// A promise that carries a stop token: Token() yields the token of the flow it belongs to.
template <class P>
concept HasStopToken = requires(const P& p) {
    { p.Token() } -> std::convertible_to<StopToken>;
};

// A promise that carries its unowned chain's root (a DetachedTask's frame), or a null handle.
template <class P>
concept CarriesUnownedRoot = requires(const P& p) {
    { p.UnownedRoot() } -> std::convertible_to<std::coroutine_handle<>>;
};
} // namespace TC::Strands
