#pragma once
// OperationCancelled and ThisCoroStopToken(): how a cancelled coroutine unwinds, and how it
// reads the token it was started with.

#include <TC/Strands/Awaitable.h>
#include <TC/Strands/StopToken.h>
#include <TC/detail/Export.h>

#include <coroutine>
#include <exception>

namespace TC::Strands
{
// Thrown by a cancelled frame to unwind through RAII (from await_resume once stop is requested);
// WhenAny tells cancelled from failed children by this type.
class TC_API OperationCancelled : public std::exception
{
public:
    const char* what() const noexcept override { return "TC::Strands::OperationCancelled"; }
};

} // namespace TC::Strands

namespace TC::detail
{
struct ThisCoroStopTokenAwaiter
{
    Strands::StopToken token;
    bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting) noexcept
    {
        if constexpr (Strands::HasStopToken<Promise>)
            token = awaiting.promise().Token();
        return false; // never suspends: the token is read and the coroutine goes on at once
    }
    Strands::StopToken await_resume() noexcept { return std::move(token); }
};
} // namespace TC::detail

namespace TC::Strands
{

// co_await ThisCoroStopToken(): the coroutine's token, without suspending (a default token when
// the promise carries none).
[[nodiscard("co_await it to read the token")]] inline detail::ThisCoroStopTokenAwaiter
ThisCoroStopToken() noexcept
{
    return {};
}
} // namespace TC::Strands
