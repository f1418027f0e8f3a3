#pragma once
// DetachedTask: a coroutine started for its effects. Its body runs to its first suspension when
// it is called, and its frame frees itself at the end, so nobody holds a handle to it.

#include <coroutine>
#include <cstdio>
#include <exception>

#include <TC/Strands/StopToken.h>

namespace TC
{
// The one coroutine shape nothing owns. Its promise names itself as the chain's unowned root, so
// every Task awaited beneath it carries that root, and an executor that drops a parked resumption
// of the chain can free it from the top (ParkedWork::abandon). An exception escaping the body
// terminates the process, because there is no caller to hand it to. Its stop token is never
// stopped, so a Task awaited from it takes the ordinary inheritance path.
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
            std::fputs("TC::DetachedTask: an exception escaped a detached coroutine\n", stderr);
            std::terminate();
        }

        const StopToken& Token() const noexcept { return token_; }
        std::coroutine_handle<> UnownedRoot() const noexcept
        {
            return std::coroutine_handle<promise_type>::from_promise(
                const_cast<promise_type&>(*this)); // NOLINT: from_promise wants non-const
        }

    private:
        StopToken token_; // never stopped: no source
    };
};
} // namespace TC
