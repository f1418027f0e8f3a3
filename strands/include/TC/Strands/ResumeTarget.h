#pragma once
// ResumeTarget: where an awaitable that another thread completes hands its coroutine back --
// the executor current at the suspension, plus, for a strand, a reference that keeps the
// strand's shared state alive across the park.

#include <TC/Executor.h>
#include <TC/detail/Export.h>

#include <memory>
#include <utility>

namespace TC
{
namespace detail
{
class StrandCore;
// The shared state of the strand whose batch is running on this thread and which is the
// innermost ExecutorScope, or null.
TC_API std::shared_ptr<StrandCore> RunningStrandFor(IExecutor* executor) noexcept;
} // namespace detail

// A raw IExecutor* would dangle: a key goes idle and is reclaimed while the coroutine waits, or
// an owner { AsyncQueue queue; Strand strand; } destroys the strand first. A strand's shared
// state outlives its Strand for as long as a target holds it, and once closed drops what it is
// given (freeing a chain nobody owns). On a Scheduler or any executor that is not a strand the
// target carries no reference. Copyable; any thread.
class ResumeTarget
{
public:
    ResumeTarget() noexcept = default;
    explicit ResumeTarget(IExecutor& executor) noexcept : executor_(&executor) {}
    ResumeTarget(IExecutor* executor, std::shared_ptr<void> keepAlive) noexcept
        : executor_(executor), keepAlive_(std::move(keepAlive))
    {
    }

    // What CurrentExecutor() answers on this thread, holding the strand's state where it is one;
    // empty outside every scope.
    static ResumeTarget Current()
    {
        IExecutor* executor = CurrentExecutor();
        if (!executor)
            return {};
        return ResumeTarget(executor, detail::RunningStrandFor(executor));
    }
    // Current(), or `fallback` outside every scope.
    static ResumeTarget CurrentOr(IExecutor& fallback)
    {
        ResumeTarget target = Current();
        return target ? target : ResumeTarget(fallback);
    }

    explicit operator bool() const noexcept { return executor_ != nullptr; }
    IExecutor* Executor() const noexcept { return executor_; }

    // Hands the work to the executor; throws what it throws (a refusal), work left with caller.
    void Submit(ParkedWork work) const { executor_->Submit(work); }

private:
    IExecutor* executor_ = nullptr;
    std::shared_ptr<void> keepAlive_;
};
} // namespace TC
