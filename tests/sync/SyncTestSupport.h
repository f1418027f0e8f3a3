#pragma once
// Helpers for the sync tests: the three kinds of waiter, a fire-and-forget coroutine, polling
// with a deadline, and the stress scale.

#include "support/StressScale.h"
#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#ifndef TC_SYNC_STRESS_SCALE
#define TC_SYNC_STRESS_SCALE 1.0
#endif

namespace TC::SyncTests
{
using namespace std::chrono_literals;

enum class WaiterKind
{
    Task,
    Thread,
    Coroutine,
};

inline constexpr WaiterKind kAllKinds[] = {WaiterKind::Task, WaiterKind::Thread,
                                           WaiterKind::Coroutine};

inline const char* Name(WaiterKind kind)
{
    switch (kind)
    {
    case WaiterKind::Task:
        return "task";
    case WaiterKind::Thread:
        return "converted thread";
    case WaiterKind::Coroutine:
        return "coroutine";
    }
    return "?";
}

// Operation counts for stress tests: the base count (sized for a few seconds in Release) times
// the build's scale (smaller in Debug and under sanitizers) times TC_STRESS_SCALE
// (tests/support/StressScale.h).
inline std::int64_t Scaled(std::int64_t base)
{
    return TCStress::Scale<std::int64_t>(base, TC_SYNC_STRESS_SCALE, 1, std::int64_t{1} << 40);
}

// An eager coroutine that destroys itself at the end; it reports completion through the
// state it was given.
struct Fire
{
    struct promise_type
    {
        Fire get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

// Wraps an awaiter so that its result goes to `f`: lets a test record what a coroutine's
// co_await yielded. Built in place (awaiters do not move):
//     return Then<X::WaitForAwaiter, decltype(f)>{x.WaitAsync(5ms), f};
template <class Inner, class F>
struct Then
{
    Inner inner;
    F f;
    bool await_ready() { return inner.await_ready(); }
    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> handle)
    {
        return inner.await_suspend(handle);
    }
    void await_resume()
    {
        if constexpr (std::is_void_v<decltype(inner.await_resume())>)
        {
            inner.await_resume();
            f();
        }
        else
        {
            f(inner.await_resume());
        }
    }
};

// Polls `done` until it is true or `limit` passed; returns the last answer.
template <class Predicate>
bool Eventually(Predicate done, std::chrono::milliseconds limit = 20s)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done())
    {
        if (std::chrono::steady_clock::now() > deadline)
            return done();
        std::this_thread::sleep_for(100us);
    }
    return true;
}

// Starts waiters of any kind on a two-worker scheduler and counts the ones that finished.
class Waiters
{
public:
    explicit Waiters(unsigned workers = 2) : scheduler_(workers) {}
    Waiters(const Waiters&) = delete;
    Waiters& operator=(const Waiters&) = delete;
    ~Waiters() { JoinAll(); }

    // `blocking` runs in a task or on a new thread; `awaitable()` returns what a coroutine,
    // started on the scheduler, co_awaits. Both forms finish by counting in Finished().
    template <class Blocking, class MakeAwaitable>
    void Start(WaiterKind kind, Blocking blocking, MakeAwaitable awaitable)
    {
        switch (kind)
        {
        case WaiterKind::Task:
            tasks_.push_back(scheduler_.Start(
                [this, blocking]() mutable
                {
                    blocking();
                    finished_.fetch_add(1);
                }));
            break;
        case WaiterKind::Thread:
            threads_.emplace_back(
                [this, blocking]() mutable
                {
                    blocking();
                    finished_.fetch_add(1);
                });
            break;
        case WaiterKind::Coroutine:
            RunAsync(*this, std::move(awaitable));
            break;
        }
    }

    int Finished() const { return finished_.load(); }
    bool WaitFinished(int n, std::chrono::milliseconds limit = 20s)
    {
        return Eventually([&] { return finished_.load() >= n; }, limit);
    }

    void JoinAll()
    {
        for (auto& task : tasks_)
            task.Join();
        tasks_.clear();
        for (auto& thread : threads_)
            thread.join();
        threads_.clear();
    }

    Scheduler& GetScheduler() { return scheduler_; }

private:
    template <class MakeAwaitable>
    static Fire RunAsync(Waiters& self, MakeAwaitable awaitable)
    {
        co_await self.scheduler_.Schedule();
        co_await awaitable();
        self.finished_.fetch_add(1);
    }

    Scheduler scheduler_;
    std::vector<JoinHandle> tasks_;
    std::vector<std::thread> threads_;
    std::atomic<int> finished_{0};
};
} // namespace TC::SyncTests
