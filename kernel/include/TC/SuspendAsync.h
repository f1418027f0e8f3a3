#pragma once
// co_await SuspendTaskAsync(callback) and SuspendTaskForAsync(callback, timeout): the suspend
// protocol for C++20 coroutines. The entry lives in the awaiter, inside the coroutine frame, so
// waiting allocates nothing.

#include <TC/Duration.h>
#include <TC/Executor.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>

#include <coroutine>
#include <cstdint>

namespace TC
{
namespace detail
{
// Deadline bookkeeping of one timed wait; kernel-private.
struct TimerNode
{
    std::int64_t deadline = 0; // steady-clock nanoseconds
    TimerNode* child = nullptr;
    TimerNode* sibling = nullptr;
    TimerNode* prev = nullptr; // parent for a first child, left sibling otherwise
    std::atomic<std::uint32_t> state{0};
    SuspendedTaskEntry* entry = nullptr;
};

void PrepareCoroutineEntry(SuspendedTaskEntry& entry, std::coroutine_handle<> handle) noexcept;
// Both return false when the coroutine was resumed during OnSuspended and had no executor to go
// to: await_suspend then returns false and the coroutine continues at once, on this thread.
bool SuspendCoroutine(SuspendedTaskEntry& entry, ISuspendCallback* callback) noexcept;
bool SuspendCoroutineFor(SuspendedTaskEntry& entry, TimerNode& timer, ISuspendCallback* callback,
                         Duration timeout) noexcept;
// Settles the timer after the coroutine runs again; returns false if the wait timed out.
bool FinishCoroutineTimedWait(SuspendedTaskEntry& entry, TimerNode& timer) noexcept;
} // namespace detail

// co_await it: runs callback->OnSuspended(handle) from await_suspend, and resumes the coroutine
// when the handle reaches ResumeTask -- through CurrentExecutor() as it was at the suspension,
// or inline on the resuming thread when there was none. The awaiter must be awaited at once.
class [[nodiscard("co_await it: SuspendTaskAsync does nothing otherwise")]] SuspendAwaiter
{
public:
    explicit SuspendAwaiter(ISuspendCallback* callback) noexcept : callback_(callback) {}
    SuspendAwaiter(const SuspendAwaiter&) = delete;
    SuspendAwaiter& operator=(const SuspendAwaiter&) = delete;

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> handle) noexcept
    {
        detail::PrepareCoroutineEntry(entry_, handle);
        return detail::SuspendCoroutine(entry_, callback_);
    }
    void await_resume() const noexcept {}

private:
    ISuspendCallback* callback_;
    SuspendedTaskEntry entry_;
};

// The timed form: co_await yields true if a ResumeTask ended the wait, false if it timed out.
class [[nodiscard("co_await it: SuspendTaskForAsync does nothing otherwise")]] SuspendForAwaiter
{
public:
    SuspendForAwaiter(ISuspendCallback* callback, Duration timeout) noexcept
        : callback_(callback), timeout_(timeout)
    {
    }
    SuspendForAwaiter(const SuspendForAwaiter&) = delete;
    SuspendForAwaiter& operator=(const SuspendForAwaiter&) = delete;

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> handle) noexcept
    {
        detail::PrepareCoroutineEntry(entry_, handle);
        return detail::SuspendCoroutineFor(entry_, timer_, callback_, timeout_);
    }
    bool await_resume() noexcept { return detail::FinishCoroutineTimedWait(entry_, timer_); }

private:
    ISuspendCallback* callback_;
    Duration timeout_;
    SuspendedTaskEntry entry_;
    detail::TimerNode timer_;
};

inline SuspendAwaiter SuspendTaskAsync(ISuspendCallback* callback) noexcept
{
    return SuspendAwaiter(callback);
}

inline SuspendForAwaiter SuspendTaskForAsync(ISuspendCallback* callback, Duration timeout) noexcept
{
    return SuspendForAwaiter(callback, timeout);
}
} // namespace TC
