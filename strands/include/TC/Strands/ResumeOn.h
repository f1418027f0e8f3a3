#pragma once
// co_await ResumeOn{executor}: continue where that executor runs things.

#include <TC/Executor.h>
#include <TC/Strands/detail/ParkedWorkFor.h>

#include <coroutine>

namespace TC::Strands
{
// Hands the coroutine to `executor` as ParkedWork (with its unowned root). A refusal throws out
// of the co_await. The executor must outlive the submission.
struct [[nodiscard("co_await it: ResumeOn does nothing otherwise")]] ResumeOn
{
    IExecutor& executor;

    bool await_ready() const noexcept { return false; }
    template <class Promise>
    void await_suspend(std::coroutine_handle<Promise> awaiting)
    {
        executor.Submit(detail::ParkedWorkFor(awaiting));
    }
    void await_resume() const noexcept {}
};
} // namespace TC::Strands
