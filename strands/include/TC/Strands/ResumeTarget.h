#pragma once
// ResumeTarget: where an awaitable completed elsewhere hands its coroutine back: the executor
// current at the suspension, and for a strand a reference keeping its shared state alive.
//   TC::Strands::ResumeTarget target = TC::Strands::ResumeTarget::Current();
//   target.Submit(work); // later, from any thread

#include <TC/Executor.h>
#include <TC/detail/Export.h>

#include <memory>
#include <utility>


namespace TC::detail
{
class StrandCore;
// The shared state of the strand running a batch on this thread as innermost scope, or null.
TC_API std::shared_ptr<StrandCore> RunningStrandFor(IExecutor* executor) noexcept;
} // namespace TC::detail

namespace TC::Strands
{

// Holds a strand's shared state across the park (a raw IExecutor* would dangle); once closed, the
// strand drops what it is given. No reference for other executors. Copyable; any thread.
class ResumeTarget
{
public:
    ResumeTarget() noexcept = default;
    explicit ResumeTarget(IExecutor& executor) noexcept : executor_(&executor) {}
    ResumeTarget(IExecutor* executor, std::shared_ptr<void> keepAlive) noexcept
        : executor_(executor), keepAlive_(std::move(keepAlive))
    {
    }

    // What CurrentExecutor() answers here (a strand's state held); empty outside every scope.
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
} // namespace TC::Strands
