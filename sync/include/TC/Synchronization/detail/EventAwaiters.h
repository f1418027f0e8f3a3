#pragma once
// EventAwaiters: the coroutine forms of an event whose wait is "TryWait, else suspend on my
// callback" (OneWordEvent's kinds and AutoResetEvent_s).

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendAsync.h>

#include <coroutine>

namespace TC::Synchronization::detail
{
// co_await: passes if event.TryWait() does, else suspends through `callback` (which re-checks
// before publishing); continues on the executor current at the suspension.
template <class Event>
class [[nodiscard("co_await it")]] EventWaitAwaiter
{
public:
    EventWaitAwaiter(Event & event, ISuspendCallback & callback) noexcept
        : event_(event), inner_(&callback)
    {
    }
    bool await_ready() noexcept
    {
        return event_.TryWait();
    }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        return inner_.await_suspend(handle);
    }
    void await_resume() const noexcept {}

private:
    Event& event_;
    SuspendAwaiter inner_;
};

// The timed form: yields true if the event let the coroutine pass, false on timeout.
template <class Event>
class [[nodiscard("co_await it")]] EventWaitForAwaiter
{
public:
    EventWaitForAwaiter(Event & event, ISuspendCallback & callback, Duration timeout) noexcept
        : event_(event), inner_(&callback, timeout)
    {
    }
    bool await_ready() noexcept
    {
        return ready_ = event_.TryWait();
    }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        return inner_.await_suspend(handle);
    }
    bool await_resume() noexcept
    {
        return ready_ || inner_.await_resume();
    }

private:
    Event& event_;
    SuspendForAwaiter inner_;
    bool ready_ = false;
};
} // namespace TC::Synchronization::detail
