#pragma once
// co_await SuspendTaskAsync / SuspendTaskForAsync: the suspend protocol for coroutines; waiting
// allocates nothing.
//   bool resumed = co_await TC::SuspendTaskForAsync(&callback, std::chrono::milliseconds(5));

#include <TC/Duration.h>
#include <TC/Executor.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/CoroutineZone.h>
#include <TC/detail/Export.h>

#include <concepts>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace TC
{
namespace detail
{
class SchedulerCore;

// Deadline bookkeeping of one timed wait; kernel-private.
struct TimerNode
{
    SchedulerCore* countedBy = nullptr; // the scheduler waiting for this parked coroutine
    std::int64_t deadline = 0; // steady-clock nanoseconds
    TimerNode* child = nullptr;
    TimerNode* sibling = nullptr;
    TimerNode* prev = nullptr; // parent for a first child, left sibling otherwise
    std::atomic<std::uint32_t> state{0};
    SuspendedTaskEntry* entry = nullptr;
};

TC_API void PrepareCoroutineEntry(SuspendedTaskEntry& entry, std::coroutine_handle<> handle,
                                  std::coroutine_handle<> abandon,
                                  std::shared_ptr<void>& keepAlive) noexcept;

// A promise naming its unowned chain's root (UnownedRoot()), for executors that drop it.
template <class Promise>
std::coroutine_handle<> UnownedRootOfPromise(std::coroutine_handle<Promise> handle) noexcept
{
    if constexpr (std::is_void_v<Promise>)
        return nullptr; // a type-erased handle names no promise
    else if constexpr (requires(const Promise& p) {
                      { p.UnownedRoot() } -> std::convertible_to<std::coroutine_handle<>>;
                  })
        return handle.promise().UnownedRoot();
    else
        return nullptr;
}
// False when resumed during OnSuspended with no executor: the coroutine continues at once.
TC_API bool SuspendCoroutine(SuspendedTaskEntry& entry, ISuspendCallback* callback) noexcept;
TC_API bool SuspendCoroutineFor(SuspendedTaskEntry& entry, TimerNode& timer,
                                ISuspendCallback* callback, Duration timeout) noexcept;
// A frame destroyed while parked leaves the lists DumpTasks reads; checked: during a timed wait
// it fails "coroutine destroyed during a timed wait".
TC_API void ForgetParkedEntry(SuspendedTaskEntry& entry) noexcept;

// Settles the timer after the coroutine runs again; returns false if the wait timed out.
TC_API bool FinishCoroutineTimedWait(SuspendedTaskEntry& entry, TimerNode& timer) noexcept;

TC_API void ListParkedElsewhere(SuspendedTaskEntry& entry, std::coroutine_handle<> handle,
                                const WaitTarget& target) noexcept;
TC_API void UnlistParkedCoroutine(SuspendedTaskEntry& entry) noexcept;

// Shows DumpTasks a coroutine that a primitive parks in a list of its own, not through
// SuspendTaskAsync: List before it can be woken, Unlist before it is handed on to run.
class ParkedListing
{
public:
    ParkedListing() noexcept = default;
    ~ParkedListing() { Unlist(); } // a frame destroyed while parked
    ParkedListing(const ParkedListing&) = delete;
    ParkedListing& operator=(const ParkedListing&) = delete;

    void List(std::coroutine_handle<> handle, const WaitTarget& target) noexcept
    {
        ListParkedElsewhere(entry_, handle, target);
    }
    void Unlist() noexcept
    {
        if (entry_.listing_)
            UnlistParkedCoroutine(entry_);
    }

private:
    SuspendedTaskEntry entry_;
};
} // namespace detail

// Runs OnSuspended from await_suspend; resumes through CurrentExecutor() at suspension (inline
// on the resumer if none), holding its KeepAlive() and handing it the unowned root. Await at once.
class [[nodiscard("co_await it: SuspendTaskAsync does nothing otherwise")]] SuspendAwaiter
{
public:
    explicit SuspendAwaiter(ISuspendCallback* callback) noexcept { entry_.callback_ = callback; }
    ~SuspendAwaiter()
    {
        if (TC_CHECKED || entry_.listing_) [[unlikely]]
            detail::ForgetParkedEntry(entry_);
    }
    SuspendAwaiter(const SuspendAwaiter&) = delete;
    SuspendAwaiter& operator=(const SuspendAwaiter&) = delete;

    bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        detail::PrepareCoroutineEntry(entry_, handle, detail::UnownedRootOfPromise(handle), keepAlive_);
        return detail::SuspendCoroutine(entry_, entry_.callback_);
    }
    void await_resume() const noexcept { detail::IdentifyCoroutine(nullptr); }

private:
    SuspendedTaskEntry entry_; // holds the callback from the start
    std::shared_ptr<void> keepAlive_;
};

// Timed: true if a ResumeTask ended the wait, false on timeout. Do not destroy the coroutine
// meanwhile. Parked on a Scheduler from its work, it holds its Stop until it ran there.
class [[nodiscard("co_await it: SuspendTaskForAsync does nothing otherwise")]] SuspendForAwaiter
{
public:
    SuspendForAwaiter(ISuspendCallback* callback, Duration timeout) noexcept : timeout_(timeout)
    {
        entry_.callback_ = callback;
    }
    ~SuspendForAwaiter()
    {
        if (TC_CHECKED || entry_.listing_) [[unlikely]]
            detail::ForgetParkedEntry(entry_);
    }
    SuspendForAwaiter(const SuspendForAwaiter&) = delete;
    SuspendForAwaiter& operator=(const SuspendForAwaiter&) = delete;

    bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        detail::PrepareCoroutineEntry(entry_, handle, detail::UnownedRootOfPromise(handle), keepAlive_);
        return detail::SuspendCoroutineFor(entry_, timer_, entry_.callback_, timeout_);
    }
    bool await_resume() noexcept
    {
        detail::IdentifyCoroutine(nullptr);
        return detail::FinishCoroutineTimedWait(entry_, timer_);
    }

private:
    Duration timeout_;
    SuspendedTaskEntry entry_;
    detail::TimerNode timer_;
    std::shared_ptr<void> keepAlive_;
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
