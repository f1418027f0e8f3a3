#pragma once
// DetachedTask: a coroutine started for its effects; it runs to its first suspension when called
// and frees its own frame at the end.
//   TC::Strands::DetachedTask Serve(Queue& q) { while (auto item = co_await q.Pop()) Handle(*item); }

#include <coroutine>
#include <cstdio>
#include <exception>
#include <utility>

#include <TC/Strands/StopToken.h>
#include <TC/Strands/detail/MarkedAwait.h>
#include <TC/detail/CoroutineZone.h>

namespace TC::Strands
{
// Nothing owns it: it is its chain's unowned root, so an executor dropping a parked resumption
// frees the chain from the top. An escaping exception terminates; its stop token never stops.
class DetachedTask
{
public:
    struct promise_type
    {
        DetachedTask get_return_object() const noexcept { return {}; }
        std::suspend_never initial_suspend() const noexcept { return {}; }
        std::suspend_never final_suspend() const noexcept { return {}; }
        void return_void() const noexcept {}
        [[noreturn]] void unhandled_exception() const noexcept
        {
            std::fputs("TC::Strands::DetachedTask: an exception escaped a detached coroutine\n", stderr);
            std::terminate();
        }

        // Its awaits name its chain (a fresh id, "coroutine") to a scheduler's coroutine zone.
        template <class Operand>
        auto await_transform(Operand&& operand)
        {
            return detail::MarkAwait(std::forward<Operand>(operand), *this);
        }
        void MarkSuspended() const noexcept {}
        CoroutineIdentity& Identity() noexcept { return identity_; }

        const StopToken& Token() const noexcept { return token_; }
        std::coroutine_handle<> UnownedRoot() const noexcept
        {
            return std::coroutine_handle<promise_type>::from_promise(
                const_cast<promise_type&>(*this)); // NOLINT: from_promise wants non-const
        }

    private:
        StopToken token_; // never stopped: no source
        CoroutineIdentity identity_;
    };
};
} // namespace TC::Strands
