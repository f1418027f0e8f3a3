#pragma once
// IExecutor, ParkedWork, ExecutorScope, CurrentExecutor: where a suspended coroutine resumes.
//   TC::ExecutorScope scope(&myExecutor);  // CurrentExecutor() == &myExecutor on this thread

#include <TC/detail/Export.h>

#include <coroutine>
#include <memory>
#include <utility>

namespace TC
{
// What a coroutine hands an executor: the handle and, for an unowned chain, the root to destroy
// if dropped (destroy `abandon`, never `handle`).
struct ParkedWork
{
    std::coroutine_handle<> handle;
    std::coroutine_handle<> abandon; // null: the chain is owned; dropping frees nothing

    // Drops the work, freeing an unowned chain. Safe when empty.
    void Abandon() noexcept
    {
        if (auto root = std::exchange(abandon, nullptr))
            root.destroy();
        handle = nullptr;
    }
};

// Resumes handed coroutines. Submit: any thread, never inline unless documented; a refusing
// executor throws, the work staying with the caller. Derived classes: `using IExecutor::Submit;`.
class TC_API IExecutor
{
public:
    virtual void Submit(std::coroutine_handle<> handle) = 0;
    virtual void Submit(ParkedWork work) = 0;

    // Held by a coroutine parked here until handed back (once per park), keeping the executor
    // alive for its resumer. Default: nothing (for executors outliving their work).
    virtual std::shared_ptr<void> KeepAlive() noexcept { return {}; }

protected:
    IExecutor() = default;
    IExecutor(const IExecutor&) = default;
    IExecutor& operator=(const IExecutor&) = default;
    ~IExecutor() = default;
};

// While it lives, CurrentExecutor() on this thread is `executor`; scopes nest. Never across a
// suspension ("ExecutorScope held across a suspension").
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

// The innermost ExecutorScope's executor on this thread, or nullptr.
inline IExecutor* CurrentExecutor() noexcept
{
    const ExecutorScope* scope = ExecutorScope::Innermost();
    return scope ? scope->Executor() : nullptr;
}
} // namespace TC
