#pragma once
// Task<T>: a lazy coroutine producing one T (or nothing), started by its one awaiter, which owns
// its frame and gets control back when it is done.
//   TC::Strands::Task<int> Answer() { co_return 42; }
//   TC::Strands::Task<void> Caller() { int value = co_await Answer(); }

#include <TC/Checked.h>
#include <TC/Strands/Awaitable.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/detail/MarkedAwait.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace TC::Strands
{
template <class T = void>
class Task;

// Task starts that may nest on one thread's stack; checked mode refuses the next by name.
inline constexpr std::uint32_t kTaskNestingLimit = 10000;

} // namespace TC::Strands

namespace TC::detail
{
class ChainFrame;
class TaskPromiseBase;

// Move-only owner of one Task frame; freeing it frees the frames beneath (Reset()).
class TC_API TaskFrame
{
public:
    TaskFrame() noexcept = default;
    explicit TaskFrame(TaskPromiseBase& promise) noexcept : promise_(&promise) {}
    TaskFrame(TaskFrame&& other) noexcept : promise_(std::exchange(other.promise_, nullptr)) {}
    TaskFrame& operator=(TaskFrame&& other) noexcept
    {
        if (this != &other)
        {
            Reset();
            promise_ = std::exchange(other.promise_, nullptr);
        }
        return *this;
    }
    TaskFrame(const TaskFrame&) = delete;
    TaskFrame& operator=(const TaskFrame&) = delete;
    ~TaskFrame() { Reset(); }

    // Destroys the frame and every frame it awaits (combinator children in order), deepest
    // first, each before its awaiter, in constant stack.
    void Reset() noexcept;
    TaskPromiseBase* Release() noexcept { return std::exchange(promise_, nullptr); }
    TaskPromiseBase* Get() const noexcept { return promise_; }
    explicit operator bool() const noexcept { return promise_ != nullptr; }

private:
    TaskPromiseBase* promise_ = nullptr;
};

// A frame-owning thing a ChainFrame suspends on (a combinator's awaiter), for Reset's loop.
class AwaitedFrames
{
public:
    // Takes the next owned frame out for the caller to free; null when none is left.
    virtual ChainFrame* TakeFrame() noexcept = 0;

protected:
    AwaitedFrames() noexcept = default;
    AwaitedFrames(const AwaitedFrames&) noexcept = default;
    AwaitedFrames& operator=(const AwaitedFrames&) noexcept = default;
    ~AwaitedFrames() = default;
};

// A frame TaskFrame::Reset frees: its handle and await-chain links (set while suspended).
class ChainFrame
{
public:
    // Set once by get_return_object.
    std::coroutine_handle<> Frame() const noexcept { return self_; }

    // `awaiting` suspends on this frame: until ResumedAwaiting(), its teardown frees this first.
    void SuspendedAwaiting(ChainFrame& awaiting, TaskFrame& slot) noexcept
    {
        awaiting.awaited_ = &slot;
        awaiting_ = &awaiting;
    }
    void ResumedAwaiting() const noexcept
    {
        if (awaiting_)
            awaiting_->awaited_ = nullptr;
    }

    // Suspends on `frames`: until ResumedOnFrames(), teardown frees those first.
    void SuspendedOnFrames(AwaitedFrames& frames) noexcept { awaitedFrames_ = &frames; }
    void ResumedOnFrames() noexcept { awaitedFrames_ = nullptr; }

protected:
    ChainFrame() noexcept = default;
    ChainFrame(const ChainFrame&) = delete;
    ChainFrame& operator=(const ChainFrame&) = delete;
    ~ChainFrame() = default;

    void SetFrame(std::coroutine_handle<> self) noexcept { self_ = self; }

private:
    friend class TaskFrame;

    // Next frame owned through what it is suspended on, or null.
    ChainFrame* TakeAwaited() noexcept;

    std::coroutine_handle<> self_;
    // Slot owning the Task frame this one awaits, or null.
    TaskFrame* awaited_ = nullptr;
    // Combinator awaiter this one is suspended on, or null.
    AwaitedFrames* awaitedFrames_ = nullptr;
    // The frame awaiting this one (set with its awaited_, or by teardown).
    ChainFrame* awaiting_ = nullptr;
};

// Every Task promise's state: awaiter, inherited stop token, unowned root, escaped exception.
class TaskPromiseBase : public ChainFrame
{
public:
    // Transfers to a suspended awaiter, else returns to the resumer.
    struct FinalAwaiter
    {
        bool await_ready() const noexcept { return false; }
        template <class Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept
        {
            TaskPromiseBase& promise = self.promise();
            // Read first: after the handshake the awaiter may free the frame.
            const std::coroutine_handle<> continuation = promise.continuation_;
            // A root, or never suspended (still in its start): no handshake.
            if (!continuation || !promise.suspendedOnce_)
                return std::noop_coroutine();
            if (!promise.FinishedSecond())
                return std::noop_coroutine(); // the awaiter is still deciding
            return continuation;
        }
        void await_resume() const noexcept {}
    };

    std::suspend_always initial_suspend() const noexcept { return {}; }
    FinalAwaiter final_suspend() const noexcept { return {}; }
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    const Strands::StopToken& Token() const noexcept { return token_; }
    std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }

    // A Task's awaiter marks this frame only where it stays suspended; other awaiters are
    // wrapped to mark it before their await_suspend.
    template <class U>
    typename ::TC::Strands::Task<U>::Awaiter await_transform(::TC::Strands::Task<U>&& task) noexcept
    {
        return std::move(task).operator co_await();
    }
    template <class Operand>
    auto await_transform(Operand&& operand)
    {
        return MarkAwait(std::forward<Operand>(operand), *this);
    }

    // Whether the body has suspended (or begun to).
    bool SuspendedOnce() const noexcept { return suspendedOnce_; }

    // Written only inside its start, on the starting thread.
    void MarkSuspended() noexcept
    {
        if (!suspendedOnce_)
            suspendedOnce_ = true;
    }

    // The awaiting coroutine (a root task has none).
    void SetContinuation(std::coroutine_handle<> continuation) noexcept
    {
        continuation_ = continuation;
    }
    void SetToken(Strands::StopToken token) noexcept { token_ = std::move(token); }
    void SetUnownedRoot(std::coroutine_handle<> root) noexcept { unownedRoot_ = root; }

    // Copies what the awaiting promise carries (Awaitable.h concepts).
    template <class AwaitingPromise>
    void InheritFrom(AwaitingPromise& awaiting) noexcept
    {
        if constexpr (Strands::HasStopToken<AwaitingPromise>)
            token_ = awaiting.Token();
        if constexpr (Strands::CarriesUnownedRoot<AwaitingPromise>)
            unownedRoot_ = awaiting.UnownedRoot();
    }

    // Starts this frame: false if it finished during the start, true if its final suspension
    // will resume the awaiter. `awaiting` is marked suspended before the handshake.
    bool StartAwaited(TaskPromiseBase* awaiting) noexcept;

protected:
    void RethrowIfFailed() const
    {
        if (exception_)
            std::rethrow_exception(exception_);
    }

private:
    // StartAwaited/FinalAwaiter handshake: the second to exchange continues the awaiter.
    // acq_rel (acquire on the first look): each side sees what the other left.
    enum Handoff : std::uint8_t
    {
        kUndecided,
        kFinished,         // the frame finished first
        kAwaiterSuspended, // the awaiter suspended first
    };
    // Final suspension's side: true if the awaiter suspended (resume it).
    bool FinishedSecond() noexcept
    {
        return handoff_.exchange(kFinished, std::memory_order_acq_rel) == kAwaiterSuspended;
    }
    // Awaiter's side after a suspending start: true if it must stay suspended.
    bool AwaiterSuspendedFirst(TaskPromiseBase* awaiting) noexcept
    {
        if (handoff_.load(std::memory_order_acquire) == kFinished)
            return false;
        if (awaiting)
            awaiting->MarkSuspended();
        return handoff_.exchange(kAwaiterSuspended, std::memory_order_acq_rel) != kFinished;
    }

    std::coroutine_handle<> continuation_;
    // False: start and final suspension ran on one thread and skip the handshake.
    bool suspendedOnce_ = false;
    std::atomic<Handoff> handoff_{kUndecided};
    Strands::StopToken token_;
    std::coroutine_handle<> unownedRoot_;
    std::exception_ptr exception_;
};

#if TC_CHECKED
// Task starts nested on this thread's stack (checked mode).
inline std::uint32_t& NestedStarts() noexcept
{
    thread_local std::uint32_t nested = 0;
    return nested;
}

// Counts one nested start for its lifetime, refusing one past the limit.
class NestedStart
{
public:
    NestedStart() noexcept : outer_(NestedStarts())
    {
        TC_CHECK(outer_ < Strands::kTaskNestingLimit, "Task awaits nested too deep",
                 "more than TC::Strands::kTaskNestingLimit Task starts running nested on one thread's "
                 "stack: let a level suspend (ResumeOn), or iterate instead of recursing");
        NestedStarts() = outer_ + 1;
    }
    NestedStart(const NestedStart&) = delete;
    NestedStart& operator=(const NestedStart&) = delete;
    ~NestedStart() { NestedStarts() = outer_; }

private:
    std::uint32_t outer_;
};
#else
// Unchecked: nesting is not counted.
class NestedStart
{
public:
    NestedStart() noexcept = default;
    NestedStart(const NestedStart&) = delete;
    NestedStart& operator=(const NestedStart&) = delete;
    ~NestedStart() = default;
};
#endif

inline bool TaskPromiseBase::StartAwaited(TaskPromiseBase* awaiting) noexcept
{
    {
        [[maybe_unused]] const NestedStart nested;
        Frame().resume();
    }
    // Never suspended: finished inside the start, no atomics.
    if (!suspendedOnce_)
        return false;
    // Nothing of the frame or awaiter is touched after the exchange unless it says finished.
    return AwaiterSuspendedFirst(awaiting);
}

inline ChainFrame* ChainFrame::TakeAwaited() noexcept
{
    // Suspended on one Task or one combinator, never both.
    if (TaskFrame* slot = std::exchange(awaited_, nullptr))
        return slot->Release();
    if (awaitedFrames_)
        return awaitedFrames_->TakeFrame();
    return nullptr;
}

inline void TaskFrame::Reset() noexcept
{
    ChainFrame* const top = std::exchange(promise_, nullptr);
    if (!top)
        return;
    // Stackless post-order walk: each frame taken records its parent to climb back to; owners
    // are empty when destroyed.
    for (ChainFrame* frame = top;;)
    {
        while (ChainFrame* const child = frame->TakeAwaited())
        {
            child->awaiting_ = frame;
            frame = child;
        }
        ChainFrame* const above = frame->awaiting_;
        const bool last = frame == top; // `top` is the last, whatever awaits it
        frame->self_.destroy();
        if (last)
            return;
        frame = above;
    }
}

template <class T>
class TaskPromise final : public TaskPromiseBase
{
public:
    ::TC::Strands::Task<T> get_return_object() noexcept;

    template <class U = T>
        requires std::is_convertible_v<U&&, T>
    void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>)
    {
        value_.emplace(std::forward<U>(value));
    }

    // Rethrows what escaped the body, or moves the value out (once).
    T TakeResult()
    {
        RethrowIfFailed();
        return std::move(*value_);
    }

private:
    std::optional<T> value_;
};

template <>
class TaskPromise<void> final : public TaskPromiseBase
{
public:
    ::TC::Strands::Task<void> get_return_object() noexcept;
    void return_void() const noexcept {}
    void TakeResult() const { RethrowIfFailed(); }
};

[[noreturn]] inline void ThrowEmptyTask(const char* what)
{
    // A precondition violation in every build: fix the call.
    throw std::logic_error(what);
}
} // namespace TC::detail

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

