#pragma once
// Task<T>: a lazy coroutine producing one T (or nothing), started by its one awaiter, which owns
// its frame and gets control back when it is done.
//   TC::Strands::Task<int> Answer() { co_return 42; }
//   TC::Strands::Task<void> Caller() { int value = co_await Answer(); }

#include <TC/Strands/detail/TaskPromise.h>

#include <coroutine>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace TC::Strands
{
// Starts suspended: runs when awaited (co_await std::move(task), emptying the task) or when its
// owner resumes Handle(). Inherits the awaiter's stop token and unowned root.
/// - Awaiting a task that finishes without suspending uses no stack once over: constant stack in
///   a loop.
/// - Any awaiter can be awaited in the body, even one neither movable nor copyable.
/// - A task that suspends resumes its awaiter once, from its final suspension, on that thread.
/// - Nested starts cost a few frames per level; checked mode refuses one beyond
///   kTaskNestingLimit on one thread ("Task awaits nested too deep").
/// - The frame lives as long as its owning Task or awaiter. Destroying a suspended task destroys
///   its chain (safe only if nothing will resume it), deepest first, in constant stack.
template <class T>
class [[nodiscard("a Task does nothing until it is awaited")]] Task
{
public:
    static_assert(!std::is_reference_v<T>, "Task<T&> is not supported: return a pointer");
    using promise_type = detail::TaskPromise<T>;
    using Handle = std::coroutine_handle<promise_type>;

    Task() noexcept = default;
    explicit Task(Handle handle) noexcept
    {
        if (handle)
            frame_ = detail::TaskFrame(handle.promise());
    }
    Task(Task&&) noexcept = default;
    Task& operator=(Task&&) noexcept = default;

    class Awaiter
    {
    public:
        explicit Awaiter(detail::TaskFrame frame) noexcept : frame_(std::move(frame)) {}

        // An empty task is ready; await_resume refuses it with std::logic_error.
        bool await_ready() const noexcept { return !frame_ || frame_.Get()->Frame().done(); }

        // Starts the task; continues at once if it finished, else when its end resumes it.
        template <class AwaitingPromise>
        bool await_suspend(std::coroutine_handle<AwaitingPromise> awaiting) noexcept
        {
            promise_type& promise = PromiseOf(frame_);
            promise.SetContinuation(awaiting);
            promise.InheritFrom(awaiting.promise());
            // Chain frames link for Reset; others (DetachedTask) free it with this awaiter.
            if constexpr (std::is_base_of_v<detail::ChainFrame, AwaitingPromise>)
                promise.SuspendedAwaiting(awaiting.promise(), frame_);
            // Marks an awaiting Task suspended only where this await may leave it so.
            if constexpr (std::is_base_of_v<detail::TaskPromiseBase, AwaitingPromise>)
                return promise.StartAwaited(&awaiting.promise());
            else
                return promise.StartAwaited(nullptr);
        }

        T await_resume()
        {
            if (!frame_)
                detail::ThrowEmptyTask("TC::Strands::Task: awaited a task that owns no frame");
            promise_type& promise = PromiseOf(frame_);
            promise.ResumedAwaiting();
            return promise.TakeResult();
        }

    private:
        detail::TaskFrame frame_;
    };

    // The awaiter takes the frame; the Task is empty after.
    Awaiter operator co_await() && noexcept { return Awaiter(std::move(frame_)); }

    // The frame finished, or there is none.
    bool Done() const noexcept
    {
        return !frame_ || frame_.Get()->Frame().done();
    }
    bool OwnsFrame() const noexcept { return static_cast<bool>(frame_); }

    // The value (moved out, once) or the body's exception; no frame or not finished:
    // std::logic_error.
    T Result()
    {
        if (!frame_)
            detail::ThrowEmptyTask("TC::Strands::Task::Result: the task owns no frame");
        if (!frame_.Get()->Frame().done())
            detail::ThrowEmptyTask("TC::Strands::Task::Result: the task has not finished");
        return PromiseOf(frame_).TakeResult();
    }

    // For an owner driving a root task: resume it once to start it.
    Handle GetHandle() const noexcept
    {
        return frame_ ? Handle::from_promise(PromiseOf(frame_)) : Handle();
    }
    // Hands the frame to the caller to destroy (also frees the Task frames it awaits).
    Handle Release() noexcept
    {
        detail::TaskPromiseBase* const promise = frame_.Release();
        return promise ? Handle::from_promise(static_cast<promise_type&>(*promise)) : Handle();
    }

    // A root task's token, set before it starts (an awaited task takes its awaiter's).
    void SetStopToken(StopToken token) noexcept
    {
        if (frame_)
            frame_.Get()->SetToken(std::move(token));
    }
    // A root task's chain name for coroutine hooks (stable string), set before it starts.
    void SetName(const char* name) noexcept
    {
        if (frame_)
            frame_.Get()->Identity().name = name;
    }
    // Its chain's id (given now if it had none), as coroutine hooks see it.
    std::uint64_t ChainId() noexcept
    {
        if (!frame_)
            return 0;
        CoroutineIdentity& identity = frame_.Get()->Identity();
        if (identity.id == 0)
            identity.id = detail::NextUniqueId();
        return identity.id;
    }

private:
    static promise_type& PromiseOf(const detail::TaskFrame& frame) noexcept
    {
        return static_cast<promise_type&>(*frame.Get());
    }

    detail::TaskFrame frame_;
};

} // namespace TC::Strands

namespace TC::detail
{
template <class T>
TC::Strands::Task<T> TaskPromise<T>::get_return_object() noexcept
{
    const auto self = std::coroutine_handle<TaskPromise<T>>::from_promise(*this);
    SetFrame(self);
    return ::TC::Strands::Task<T>(self);
}

inline ::TC::Strands::Task<void> TaskPromise<void>::get_return_object() noexcept
{
    const auto self = std::coroutine_handle<TaskPromise<void>>::from_promise(*this);
    SetFrame(self);
    return ::TC::Strands::Task<void>(self);
}
} // namespace TC::detail

