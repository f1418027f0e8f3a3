#pragma once
// co_await ResumeOn{executor}: continue the awaiting coroutine wherever that executor runs things.

#include <TC/Executor.h>
#include <TC/Strands/detail/ParkedWorkFor.h>

#include <coroutine>

namespace TC
{
// Hands the awaiting coroutine to `executor` as ParkedWork (with its chain's unowned root, so an
// executor that drops it frees the chain). It resumes on whatever thread the executor runs it --
// a Strand, a Scheduler's worker, a host's pump. If the executor refuses it (throws), the
// exception comes out of the co_await on the awaiting thread and the coroutine stays here.
// The executor must outlive the submission; a Strand converts to IExecutor&.
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
} // namespace TC
