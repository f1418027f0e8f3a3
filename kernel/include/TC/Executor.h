#pragma once
// IExecutor, ParkedWork, ExecutorScope and CurrentExecutor: where a suspended coroutine goes back
// to, and how an executor states that it is the one running the current work.

#include <TC/detail/Export.h>

#include <coroutine>
#include <memory>
#include <utility>

namespace TC
{
// What a coroutine hands an executor: the handle to resume, and -- only where the await chain
// belongs to nobody (it bottoms out in a DetachedTask) -- the chain's root, to destroy if the
// handle is never resumed. An executor that drops work must destroy `abandon` (never `handle`:
// ownership in a chain runs downward from the root).
struct ParkedWork
{
    std::coroutine_handle<> handle;
    std::coroutine_handle<> abandon; // null: somebody owns the chain; dropping it frees nothing

    // Drops the work: frees an unowned chain from its root. Safe on an empty ParkedWork.
    void Abandon() noexcept
    {
        if (auto root = std::exchange(abandon, nullptr))
            root.destroy();
        handle = nullptr;
    }
};

// Somewhere a suspended coroutine can be handed to be resumed. Both members may be called from
// any thread and must not resume the handle inline on the caller's stack unless the executor
// documents it. An executor that refuses work (it is shut down) throws and leaves the work with
// the caller. Classes deriving from it write `using IExecutor::Submit;` so that declaring one
// overload does not hide the other.
class TC_API IExecutor
{
public:
    virtual void Submit(std::coroutine_handle<> handle) = 0;
    virtual void Submit(ParkedWork work) = 0;

    // What a coroutine parked on this executor holds until it is handed back, so that a
    // resumer submitting later never reaches a destroyed executor (a strand's shared state, say,
    // whose owner went away while the coroutine waited). The default holds nothing: executors
    // that outlive every coroutine they run (a Scheduler) need no reference. Called once per
    // park of a coroutine (SuspendTaskAsync and everything built on it).
    virtual std::shared_ptr<void> KeepAlive() noexcept { return {}; }

protected:
    IExecutor() = default;
    IExecutor(const IExecutor&) = default;
    IExecutor& operator=(const IExecutor&) = default;
    ~IExecutor() = default;
};

// A stack-shaped guard over one thread_local pointer: while it lives, CurrentExecutor() on this
// thread answers `executor`. Scopes nest. An executor states itself once per batch or turn, not
// per resumption (two thread-local stores). Never hold one across a suspension: the thread then
// runs other work under the wrong answer (checked mode fails "ExecutorScope held across a
// suspension" when a task suspends with a scope of its own still open).
class TC_API ExecutorScope
{
public:
    explicit ExecutorScope(IExecutor* executor) noexcept;
    ~ExecutorScope();
    ExecutorScope(const ExecutorScope&) = delete;
    ExecutorScope& operator=(const ExecutorScope&) = delete;

    IExecutor* Executor() const noexcept { return executor_; }
    const ExecutorScope* Outer() const noexcept { return outer_; }

    // The innermost scope on this thread, or nullptr.
    static const ExecutorScope* Innermost() noexcept;

private:
    IExecutor* executor_;
    const ExecutorScope* outer_;
};

// The executor of the innermost ExecutorScope on this thread, or nullptr outside every scope.
inline IExecutor* CurrentExecutor() noexcept
{
    const ExecutorScope* scope = ExecutorScope::Innermost();
    return scope ? scope->Executor() : nullptr;
}
} // namespace TC
