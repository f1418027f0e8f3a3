#pragma once
// IExecutor, ParkedWork, ExecutorScope and CurrentExecutor: where a suspended coroutine goes back
// to, and how an executor states that it is the one running the current work.
//   TC::ExecutorScope scope(&myExecutor);  // CurrentExecutor() == &myExecutor on this thread

#include <TC/detail/Export.h>

#include <coroutine>
#include <memory>
#include <utility>

namespace TC
{
// What a coroutine hands an executor: the handle, and for an unowned chain (a DetachedTask at
// its bottom) the root to destroy if dropped -- destroy `abandon`, never `handle`.
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

// Where a suspended coroutine is handed to be resumed. Both members: any thread, never inline
// unless documented; a refusing (shut-down) executor throws, the work staying with the caller.
// Derived classes write `using IExecutor::Submit;`.
class TC_API IExecutor
{
public:
    virtual void Submit(std::coroutine_handle<> handle) = 0;
    virtual void Submit(ParkedWork work) = 0;

    // Held by a coroutine parked here until handed back, so a later resumer never reaches a
    // destroyed executor; once per park. Default: nothing (for executors outliving their work).
    virtual std::shared_ptr<void> KeepAlive() noexcept { return {}; }

protected:
    IExecutor() = default;
    IExecutor(const IExecutor&) = default;
    IExecutor& operator=(const IExecutor&) = default;
    ~IExecutor() = default;
};

// While it lives, CurrentExecutor() on this thread answers `executor`; scopes nest. State it once
// per batch. Never hold one across a suspension ("ExecutorScope held across a suspension").
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
