#pragma once
// Detached: the smallest coroutine type the kernel tests need -- starts at once, frees its own
// frame at the end, terminates on an escaping exception.

#include <coroutine>
#include <exception>

namespace TestSupport
{
struct Detached
{
    struct promise_type
    {
        Detached get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};
} // namespace TestSupport
