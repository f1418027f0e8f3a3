#pragma once
// Task<T>: a lazy coroutine producing one T (or nothing), awaited once, started by its awaiter and
// handing control back when done; its frame is owned by whoever awaits it (owned downward).
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

// Task starts that may nest on one thread's native stack (each level still in its start); checked
// mode refuses the level beyond by name instead of overflowing.
inline constexpr std::uint32_t kTaskNestingLimit = 10000;

} // namespace TC::Strands

namespace TC::detail
{
class ChainFrame;
class TaskPromiseBase;

// The move-only owner of one Task frame; freeing it frees the frames beneath, deepest first, in
// constant native stack (Reset()).
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

    // Destroys the frame and every frame it awaits (Tasks, WhenAll/WhenAny children in order),
    // deepest first, each completely before its awaiter, in a loop.
    void Reset() noexcept;
    TaskPromiseBase* Release() noexcept { return std::exchange(promise_, nullptr); }
    TaskPromiseBase* Get() const noexcept { return promise_; }
    explicit operator bool() const noexcept { return promise_ != nullptr; }

private:
    TaskPromiseBase* promise_ = nullptr;
};

// What a ChainFrame can be suspended on that owns frames (a combinator's awaiter), freed by
// TaskFrame::Reset's loop instead of recursion.
class AwaitedFrames
{
public:
    // Takes the next still-owned frame out, for the caller to free; null once none is left.
    virtual ChainFrame* TakeFrame() noexcept = 0;

protected:
    AwaitedFrames() noexcept = default;
    AwaitedFrames(const AwaitedFrames&) noexcept = default;
    AwaitedFrames& operator=(const AwaitedFrames&) noexcept = default;
    ~AwaitedFrames() = default;
};

// A coroutine frame TaskFrame::Reset frees in its loop: its handle and the await-chain links,
// set only while it is suspended awaiting.
class ChainFrame
{
public:
    // This frame, as its handle; set once by get_return_object.
    std::coroutine_handle<> Frame() const noexcept { return self_; }

    // A frame awaiting this Task suspends on it: until ResumedAwaiting(), tearing the awaiter down
    // frees this one first.
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

    // This frame suspends on `frames`: until ResumedOnFrames(), tearing it down frees those first.
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

    // Takes the next frame owned through what it is suspended on, or null.
    ChainFrame* TakeAwaited() noexcept;

    std::coroutine_handle<> self_;
    // The awaiter's slot owning the Task frame this one is suspended awaiting, or null.
    TaskFrame* awaited_ = nullptr;
    // The combinator's awaiter this one is suspended on, or null.
    AwaitedFrames* awaitedFrames_ = nullptr;
    // The frame awaiting this one: set with its awaited_, or by the teardown taking this frame.
    ChainFrame* awaiting_ = nullptr;
};

// What every Task promise carries: the awaiter to transfer to, the inherited stop token, the
// unowned chain's root, and what escaped the body.
class TaskPromiseBase : public ChainFrame
{
public:
    // Ends the body: transfers to a suspended awaiter, else returns to whoever resumed it.
    struct FinalAwaiter
    {
        bool await_ready() const noexcept { return false; }
        template <class Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept
        {
            TaskPromiseBase& promise = self.promise();
            // Read before the handshake: the awaiter may free the frame once it learns the end.
            const std::coroutine_handle<> continuation = promise.continuation_;
            // A root, or a frame that never suspended (still its start, on the awaiter's thread):
            // no handshake.
            if (!continuation || !promise.suspendedOnce_)
                return std::noop_coroutine();
            if (!promise.FinishedSecond())
                return std::noop_coroutine(); // the awaiter is still deciding
            // The awaiter suspended: transfer to it on this thread.
            return continuation;
        }
        void await_resume() const noexcept {}
    };

    std::suspend_always initial_suspend() const noexcept { return {}; }
    FinalAwaiter final_suspend() const noexcept { return {}; }
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    const Strands::StopToken& Token() const noexcept { return token_; }
    std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }

    // Every co_await in the body: a Task's awaiter marks this frame only where it stays
    // suspended; anything else is wrapped to mark it before the awaiter's await_suspend.
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

    // Whether the body has suspended (or begun to); read by the awaiter after the start and by
    // the final suspension.
    bool SuspendedOnce() const noexcept { return suspendedOnce_; }

    // Notes that this frame suspends: written only inside its start, on the starting thread;
    // later resumers only read it.
    void MarkSuspended() noexcept
    {
        if (!suspendedOnce_)
            suspendedOnce_ = true;
    }

    // Names the awaiting coroutine; StartAwaited starts it. A root task has none.
    void SetContinuation(std::coroutine_handle<> continuation) noexcept
    {
        continuation_ = continuation;
    }
    void SetToken(Strands::StopToken token) noexcept { token_ = std::move(token); }
    void SetUnownedRoot(std::coroutine_handle<> root) noexcept { unownedRoot_ = root; }

    // Copies what the awaiting promise carries, through the concepts of Awaitable.h.
    template <class AwaitingPromise>
    void InheritFrom(AwaitingPromise& awaiting) noexcept
    {
        if constexpr (Strands::HasStopToken<AwaitingPromise>)
            token_ = awaiting.Token();
        if constexpr (Strands::CarriesUnownedRoot<AwaitingPromise>)
            unownedRoot_ = awaiting.UnownedRoot();
    }

    // Starts this frame for its awaiter; false when it finished during the start (constant stack
    // in a loop), true when its final suspension will resume the awaiter. Checked mode refuses
    // nesting beyond kTaskNestingLimit. `awaiting` (a Task awaiter's promise) is marked suspended
    // before the handshake that may leave it so.
    bool StartAwaited(TaskPromiseBase* awaiting) noexcept;

protected:
    void RethrowIfFailed() const
    {
        if (exception_)
            std::rethrow_exception(exception_);
    }

private:
    // The StartAwaited/FinalAwaiter handshake (maybe on two threads): whichever exchanges second
    // continues the awaiter. acq_rel both ways (acquire on the awaiter's first look): each side
    // sees what the other left.
    enum Handoff : std::uint8_t
    {
        kUndecided,
        kFinished,         // the frame reached its final suspension first
        kAwaiterSuspended, // the awaiter decided to stay suspended first
    };
    // The final suspension's side: true where the awaiter already suspended (resume it).
    bool FinishedSecond() noexcept
    {
        return handoff_.exchange(kFinished, std::memory_order_acq_rel) == kAwaiterSuspended;
    }
    // The awaiter's side after a start in which the frame suspended: true where it must stay
    // suspended (a look suffices if finished); the awaiting Task is marked before the exchange.
    bool AwaiterSuspendedFirst(TaskPromiseBase* awaiting) noexcept
    {
        if (handoff_.load(std::memory_order_acquire) == kFinished)
            return false;
        if (awaiting)
            awaiting->MarkSuspended();
        return handoff_.exchange(kAwaiterSuspended, std::memory_order_acq_rel) != kFinished;
    }

    std::coroutine_handle<> continuation_;
    // Whether the body ever suspended (or began to): if not, start and final suspension ran on one
    // thread and skip the handshake. Written only during the start, read after it on that thread.
    bool suspendedOnce_ = false;
    std::atomic<Handoff> handoff_{kUndecided};
    Strands::StopToken token_;
    std::coroutine_handle<> unownedRoot_;
    std::exception_ptr exception_;
};

#if TC_CHECKED
// Task starts nested on this thread's stack, for checked mode's limit (saved and restored around
// each start, so it cannot drift).
inline std::uint32_t& NestedStarts() noexcept
{
    thread_local std::uint32_t nested = 0;
    return nested;
}

// Counts one nested start for its lifetime, refusing one beyond the limit.
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
// Outside checked mode nothing counts the nesting: a start costs no thread-local access.
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
    // Never suspended: finished inside the start on this thread; no atomic operation either side.
    if (!suspendedOnce_)
        return false;
    // The body's results are read only after the handshake says finished; otherwise nothing of
    // the frame or awaiter is touched after the exchange.
    return AwaiterSuspendedFirst(awaiting);
}

inline ChainFrame* ChainFrame::TakeAwaited() noexcept
{
    // A frame is suspended on one Task or one combinator at a time, never both.
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
    // A stackless post-order walk of the frames beneath `top`: each frame taken records where it
    // was taken, the walk climbs back after destroying it; owners are empty when destroyed.
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
    // A precondition violation that survives Release builds: fix the call, do not catch it.
    throw std::logic_error(what);
}
} // namespace TC::detail

namespace TC::Strands
{

// Starts suspended: runs when awaited (co_await std::move(task)) or when its owner resumes
// Handle(). Awaiting moves the frame into the awaiter (the task is empty after); it inherits the
// awaiting coroutine's stop token and unowned root (stack: guides/coroutines.md).
/// - Awaiting a task that finishes without suspending costs no stack once over and no atomic
///   operation: constant stack in a loop, every build.
/// - Any awaiter can be awaited in the body, even one neither movable nor copyable (used in place).
/// - A task that suspends resumes its awaiter from its final suspension, on the finishing thread,
///   exactly once.
/// - Nested starts cost a few frames per level; checked mode refuses the start beyond
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

        // Starts the task; continues at once if it finished during the start, else stays
        // suspended until its final suspension resumes it (on that thread).
        template <class AwaitingPromise>
        bool await_suspend(std::coroutine_handle<AwaitingPromise> awaiting) noexcept
        {
            promise_type& promise = PromiseOf(frame_);
            promise.SetContinuation(awaiting);
            promise.InheritFrom(awaiting.promise());
            // A Task or combinator runner awaiting: linked for TaskFrame::Reset; any other
            // coroutine (DetachedTask) frees it by destroying this awaiter.
            if constexpr (std::is_base_of_v<detail::ChainFrame, AwaitingPromise>)
                promise.SuspendedAwaiting(awaiting.promise(), frame_);
            // An awaiting Task is marked suspended only where this await may leave it so.
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

    // The awaiter owns the frame from here on: the Task is empty afterwards.
    Awaiter operator co_await() && noexcept { return Awaiter(std::move(frame_)); }

    // True when the frame finished, and for a task owning no frame (Result() checks both).
    bool Done() const noexcept
    {
        return !frame_ || frame_.Get()->Frame().done();
    }
    bool OwnsFrame() const noexcept { return static_cast<bool>(frame_); }

    // The value (moved out; once), or the body's exception rethrown; a task owning no frame or
    // not finished is refused with std::logic_error.
    T Result()
    {
        if (!frame_)
            detail::ThrowEmptyTask("TC::Strands::Task::Result: the task owns no frame");
        if (!frame_.Get()->Frame().done())
            detail::ThrowEmptyTask("TC::Strands::Task::Result: the task has not finished");
        return PromiseOf(frame_).TakeResult();
    }

    // For an owner that drives a root task itself: resume it once to start it.
    Handle GetHandle() const noexcept
    {
        return frame_ ? Handle::from_promise(PromiseOf(frame_)) : Handle();
    }
    // Hands the frame to the caller to destroy (the task is empty); its destroy() frees the Task
    // frames it awaits too.
    Handle Release() noexcept
    {
        detail::TaskPromiseBase* const promise = frame_.Release();
        return promise ? Handle::from_promise(static_cast<promise_type&>(*promise)) : Handle();
    }

    // Gives a root task its flow's token, before it starts; an awaited task takes its awaiter's.
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

