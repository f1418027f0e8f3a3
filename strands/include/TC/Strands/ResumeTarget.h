#pragma once
// ResumeTarget: where an awaitable hands its coroutine back: the executor current at the
// suspension (a strand's state kept alive).
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

// Holds a strand's shared state across the park (once closed, it drops what it is given); other
// executors are not held. Copyable; any thread.
class ResumeTarget
{
public:
    ResumeTarget() noexcept = default;
    explicit ResumeTarget(IExecutor& executor) noexcept : executor_(&executor) {}
    ResumeTarget(IExecutor* executor, std::shared_ptr<void> keepAlive) noexcept
        : executor_(executor), keepAlive_(std::move(keepAlive))
    {
    }

    // CurrentExecutor() here; empty outside every scope.
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

    // Hands the work over; a refusal throws, the work left with the caller.
    void Submit(ParkedWork work) const { executor_->Submit(work); }

private:
    IExecutor* executor_ = nullptr;
    std::shared_ptr<void> keepAlive_;
};
} // namespace TC::Strands
