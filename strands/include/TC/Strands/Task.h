#pragma once
// Task<T>: a lazy coroutine producing one T (or nothing, for Task<void>), awaited once, started
// by its awaiter and handing control back to it when done, whose frame is owned by whoever
// awaits it, so a chain of tasks is owned downward from its root.

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

namespace TC
{
template <class T = void>
class Task;

// How many Task starts may run nested on one thread's native stack: a Task whose body awaits a
// Task, whose body awaits a Task, and so on, each level still running its start (none has
// suspended or finished yet). Each level costs a few native frames, so the real limit is the
// stack's; checked mode refuses the level beyond this one by name instead of overflowing.
inline constexpr std::uint32_t kTaskNestingLimit = 10000;

namespace detail
{
class ChainFrame;
class TaskPromiseBase;

// The move-only owner of one Task frame (Task's and its awaiter's). Freeing it frees the frames
// beneath, deepest first, in constant native stack: see Reset().
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

    // Destroys the frame and every frame it is suspended awaiting, directly or through the
    // awaits beneath -- Task awaits and WhenAll/WhenAny awaits, each combinator's children in
    // order: the deepest first, each completely (locals, awaiters, promise) before the frame
    // awaiting it, as a recursive teardown would order them, but in a loop.
    void Reset() noexcept;
    TaskPromiseBase* Release() noexcept { return std::exchange(promise_, nullptr); }
    TaskPromiseBase* Get() const noexcept { return promise_; }
    explicit operator bool() const noexcept { return promise_ != nullptr; }

private:
    TaskPromiseBase* promise_ = nullptr;
};

// What a ChainFrame can be suspended on that owns frames of its own (a combinator's awaiter),
// so that TaskFrame::Reset frees those frames in its loop instead of the awaiter's destructor
// recursing into them.
class AwaitedFrames
{
public:
    // Takes the next frame still owned out of this owner, for the caller to free; null once none
    // is left. The awaiter's own destruction then finds nothing to free.
    virtual ChainFrame* TakeFrame() noexcept = 0;

protected:
    AwaitedFrames() noexcept = default;
    AwaitedFrames(const AwaitedFrames&) noexcept = default;
    AwaitedFrames& operator=(const AwaitedFrames&) noexcept = default;
    ~AwaitedFrames() = default;
};

// A coroutine frame that TaskFrame::Reset frees in its loop (a Task's, a combinator's child
// runner's): its own handle and the links of the await chain through it. The links are set
// only while the frame is suspended awaiting, so a teardown never follows a stale one.
class ChainFrame
{
public:
    // This frame, as its handle; set once by get_return_object.
    std::coroutine_handle<> Frame() const noexcept { return self_; }

    // A frame awaiting this Task, whose awaiter's `slot` owns this frame, suspends on it: from
    // here until ResumedAwaiting(), a teardown of the awaiting frame frees this one first.
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

    // This frame suspends on `frames` (a combinator's awaiter): from here until ResumedOnFrames(),
    // a teardown of this frame frees what `frames` owns first.
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

    // Takes the next frame this one owns through what it is suspended on out of its owner, or
    // returns null where none is left.
    ChainFrame* TakeAwaited() noexcept;

    std::coroutine_handle<> self_;
    // The awaiter's slot owning the Task frame this one is suspended awaiting, or null.
    TaskFrame* awaited_ = nullptr;
    // The combinator's awaiter this one is suspended on, or null.
    AwaitedFrames* awaitedFrames_ = nullptr;
    // The frame awaiting this one: set with its awaited_, or by the teardown taking this frame.
    ChainFrame* awaiting_ = nullptr;
};

// What every Task promise carries besides its links: the awaiter to transfer to at the end, the
// flow's stop token (inherited from the awaiting coroutine), the root of the chain when nobody
// owns it, and what escaped the body.
class TaskPromiseBase : public ChainFrame
{
public:
    // Ends the body: hands control to the awaiting coroutine where it is suspended on this
    // frame, and otherwise back to whoever resumed this one (see StartAwaited).
    struct FinalAwaiter
    {
        bool await_ready() const noexcept { return false; }
        template <class Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept
        {
            TaskPromiseBase& promise = self.promise();
            // Read before the handshake: once the awaiter learns that this frame finished, it
            // may continue and free the frame at any moment.
            const std::coroutine_handle<> continuation = promise.continuation_;
            // A root; or a frame that never suspended, so this is still its start, on the
            // awaiter's thread, which reads the same mark once the start returns: no handshake.
            if (!continuation || !promise.suspendedOnce_)
                return std::noop_coroutine();
            if (!promise.FinishedSecond())
                return std::noop_coroutine(); // the awaiter is still deciding
            // The awaiter suspended: transfer to it, on this thread (a tail call where the
            // compiler makes one; one level of stack where it does not).
            return continuation;
        }
        void await_resume() const noexcept {}
    };

    std::suspend_always initial_suspend() const noexcept { return {}; }
    FinalAwaiter final_suspend() const noexcept { return {}; }
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    const StopToken& Token() const noexcept { return token_; }
    std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }

    // Every co_await in the body: a Task's awaiter marks this frame itself, and only where it
    // stays suspended, so a chain of tasks that finish during their starts marks none of them.
    // Anything else is wrapped so that this frame is marked before the awaiter's await_suspend.
    template <class U>
    typename ::TC::Task<U>::Awaiter await_transform(::TC::Task<U>&& task) noexcept
    {
        return std::move(task).operator co_await();
    }
    template <class Operand>
    auto await_transform(Operand&& operand)
    {
        return MarkAwait(std::forward<Operand>(operand), *this);
    }

    // Whether the body has suspended (or begun to) since it started: read by the frame's awaiter
    // after the start, and by its final suspension.
    bool SuspendedOnce() const noexcept { return suspendedOnce_; }

    // Notes that this frame suspends (or may): written only while the frame has never suspended,
    // which is inside its start, on the thread running the start; never written afterwards, so
    // the threads that resume the frame later only read it.
    void MarkSuspended() noexcept
    {
        if (!suspendedOnce_)
            suspendedOnce_ = true;
    }

    // Names the coroutine awaiting this frame; StartAwaited then starts it. A root task has none:
    // its final suspension returns to whoever resumed it.
    void SetContinuation(std::coroutine_handle<> continuation) noexcept
    {
        continuation_ = continuation;
    }
    void SetToken(StopToken token) noexcept { token_ = std::move(token); }
    void SetUnownedRoot(std::coroutine_handle<> root) noexcept { unownedRoot_ = root; }

    // Copies what the awaiting promise carries, through the concepts of Awaitable.h.
    template <class AwaitingPromise>
    void InheritFrom(AwaitingPromise& awaiting) noexcept
    {
        if constexpr (HasStopToken<AwaitingPromise>)
            token_ = awaiting.Token();
        if constexpr (CarriesUnownedRoot<AwaitingPromise>)
            unownedRoot_ = awaiting.UnownedRoot();
    }

    // Starts this frame for the awaiter that SetContinuation named, by resuming it here, and
    // says whether that awaiter must stay suspended: false when the frame finished before the
    // start returned, so the awaiter continues in its own activation and a loop of such awaits
    // runs in constant native stack. Otherwise the frame suspended somewhere, and its final
    // suspension resumes the awaiter. Each start nests one activation on the native stack until
    // the started frame first suspends or finishes: checked mode refuses a nesting deeper than
    // kTaskNestingLimit on one thread. `awaiting` is the awaiter's promise where it is a Task's:
    // marked as suspended before the handshake that may leave it suspended.
    bool StartAwaited(TaskPromiseBase* awaiting) noexcept;

protected:
    void RethrowIfFailed() const
    {
        if (exception_)
            std::rethrow_exception(exception_);
    }

private:
    // The handshake between StartAwaited and FinalAwaiter, which can run on different threads
    // when the frame suspends and another thread resumes it. Each side exchanges its state in,
    // and whichever comes second continues the awaiter. acq_rel on both exchanges (and acquire
    // on the awaiter's look before its own): where the frame finished first, the awaiter sees its
    // result and everything the body wrote; where the awaiter suspended first, the final
    // suspension sees the awaiting frame as it was left before it resumes it.
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
    // The awaiter's side, after a start in which the frame suspended: true where the awaiter
    // must stay suspended. A frame that already finished is seen by the look alone. The awaiting
    // Task is marked before the exchange, which publishes it to the thread that may resume it.
    bool AwaiterSuspendedFirst(TaskPromiseBase* awaiting) noexcept
    {
        if (handoff_.load(std::memory_order_acquire) == kFinished)
            return false;
        if (awaiting)
            awaiting->MarkSuspended();
        return handoff_.exchange(kAwaiterSuspended, std::memory_order_acq_rel) != kFinished;
    }

    std::coroutine_handle<> continuation_;
    // Whether the body ever suspended (or began to). A frame that did not has run from its start
    // to its final suspension inside the start, on one thread: the start returns false on a
    // plain read of it, and the final suspension skips the handshake. Only its first suspension
    // writes it, before the awaiter's await_suspend publishes the frame, and that is always
    // during the start; its awaiter reads it after the start returns, on the same thread.
    bool suspendedOnce_ = false;
    std::atomic<Handoff> handoff_{kUndecided};
    StopToken token_;
    std::coroutine_handle<> unownedRoot_;
    std::exception_ptr exception_;
};

#if TC_CHECKED
// The Task starts (and combinator runner starts) running nested on this thread's native stack,
// for checked mode's nesting limit. Saved and restored around each start rather than counted
// down, so a thread's count cannot drift.
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
        TC_CHECK(outer_ < kTaskNestingLimit, "Task awaits nested too deep",
                 "more than TC::kTaskNestingLimit Task starts running nested on one thread's "
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
    // Never suspended: it ran to its final suspension inside the start, on this thread, and
    // nobody else has seen it. No atomic operation on either side.
    if (!suspendedOnce_)
        return false;
    // Whatever the body left in this frame is read only after the handshake says it finished;
    // where it did not, the frame (and the awaiter) may already be resumed elsewhere, so nothing
    // of either is touched after the exchange.
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
    // A post-order walk of the tree of frames beneath `top`, without a stack: each frame taken
    // from its owner on the way down records the frame it was taken for, so the walk climbs back
    // to it once the frame is destroyed and takes its next child, if it has one. The owners are
    // empty by the time the frames holding them are destroyed, so no destructor recurses.
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
    ::TC::Task<T> get_return_object() noexcept;

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
    ::TC::Task<void> get_return_object() noexcept;
    void return_void() const noexcept {}
    void TakeResult() const { RethrowIfFailed(); }
};

[[noreturn]] inline void ThrowEmptyTask(const char* what)
{
    // A precondition violation that survives a Release build: not a recoverable error, and not
    // to be caught -- fix the call instead.
    throw std::logic_error(what);
}
} // namespace detail

// Starts suspended: nothing runs until it is awaited (co_await std::move(task)) or its Handle()
// is resumed by its owner. Awaiting moves the frame into the awaiter, which destroys it at the
// end of the co_await expression; a named task awaited with std::move is empty afterwards. The
// promise inherits the awaiting coroutine's stop token and unowned root.
//
// Stack: guides/coroutines.md, "The stack an await costs".
/// - An await of a task that finishes without suspending costs no native stack once it is over:
///   the awaiting coroutine continues in its own activation, so a loop of such awaits runs in
///   constant stack in every build, with or without tail calls, and no atomic operation.
/// - Any awaiter can be awaited in the body, also one that can be neither moved nor copied: it is
///   used in place, as the standard uses it (the promise's await_transform only forwards to it).
/// - A task that suspends resumes its awaiter from its final suspension, on the thread that
///   finished it, exactly once, also where it finishes while the awaiter is still starting it.
/// - Starts running nested (a body awaiting a task whose body awaits a task, none suspended yet)
///   cost a few native frames per level; checked mode refuses the start beyond
///   kTaskNestingLimit on one thread ("Task awaits nested too deep").
//
// Lifetime: the frame lives as long as the Task (or the awaiter it moved into) that owns it.
// Destroying a task that is suspended somewhere destroys its whole chain and is only safe when
// nothing else will resume it (a ParkedWork's abandon path exists for that). The frames it
// awaits, through Tasks and WhenAll/WhenAny alike, are freed deepest first, each completely
// before the one awaiting it, in constant native stack however deep the nesting.
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

        // An empty task (default-constructed, moved from, released) is ready; await_resume then
        // refuses it with std::logic_error.
        bool await_ready() const noexcept { return !frame_ || frame_.Get()->Frame().done(); }

        // Starts the task here and continues without suspending where it finished during its
        // start (constant stack however many such awaits run in a loop); otherwise stays
        // suspended until the task's final suspension resumes it, on whichever thread that is.
        template <class AwaitingPromise>
        bool await_suspend(std::coroutine_handle<AwaitingPromise> awaiting) noexcept
        {
            promise_type& promise = PromiseOf(frame_);
            promise.SetContinuation(awaiting);
            promise.InheritFrom(awaiting.promise());
            // A Task or a combinator's runner awaiting a Task: linked for TaskFrame::Reset. Any
            // other awaiting coroutine (a DetachedTask) frees it by destroying this awaiter.
            if constexpr (std::is_base_of_v<detail::ChainFrame, AwaitingPromise>)
                promise.SuspendedAwaiting(awaiting.promise(), frame_);
            // An awaiting Task is marked as suspended only where this await really may leave it
            // suspended (see TaskPromiseBase::await_transform).
            if constexpr (std::is_base_of_v<detail::TaskPromiseBase, AwaitingPromise>)
                return promise.StartAwaited(&awaiting.promise());
            else
                return promise.StartAwaited(nullptr);
        }

        T await_resume()
        {
            if (!frame_)
                detail::ThrowEmptyTask("TC::Task: awaited a task that owns no frame");
            promise_type& promise = PromiseOf(frame_);
            promise.ResumedAwaiting();
            return promise.TakeResult();
        }

    private:
        detail::TaskFrame frame_;
    };

    // The awaiter owns the frame from here on: the Task is empty afterwards.
    Awaiter operator co_await() && noexcept { return Awaiter(std::move(frame_)); }

    // True when the frame has finished -- and also for a task that owns no frame (default
    // constructed, moved from, released), which is why Result() checks both.
    bool Done() const noexcept
    {
        return !frame_ || frame_.Get()->Frame().done();
    }
    bool OwnsFrame() const noexcept { return static_cast<bool>(frame_); }

    // The value (moved out; call once), or what escaped the body, rethrown. Requires an owned
    // frame that is done: a task owning no frame, or not finished, is refused with
    // std::logic_error rather than answered with a default-constructed T.
    T Result()
    {
        if (!frame_)
            detail::ThrowEmptyTask("TC::Task::Result: the task owns no frame");
        if (!frame_.Get()->Frame().done())
            detail::ThrowEmptyTask("TC::Task::Result: the task has not finished");
        return PromiseOf(frame_).TakeResult();
    }

    // For an owner that drives a root task itself: resume it once to start it.
    Handle GetHandle() const noexcept
    {
        return frame_ ? Handle::from_promise(PromiseOf(frame_)) : Handle();
    }
    // Hands the frame to the caller, who must destroy it; the task is empty afterwards. Its
    // handle's destroy() frees the Task frames it awaits as Task's destruction does.
    Handle Release() noexcept
    {
        detail::TaskPromiseBase* const promise = frame_.Release();
        return promise ? Handle::from_promise(static_cast<promise_type&>(*promise)) : Handle();
    }

    // Gives a root task the token its flow observes; before it starts. A task that is awaited
    // takes its awaiter's token instead.
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

namespace detail
{
template <class T>
TC::Task<T> TaskPromise<T>::get_return_object() noexcept
{
    const auto self = std::coroutine_handle<TaskPromise<T>>::from_promise(*this);
    SetFrame(self);
    return ::TC::Task<T>(self);
}

inline ::TC::Task<void> TaskPromise<void>::get_return_object() noexcept
{
    const auto self = std::coroutine_handle<TaskPromise<void>>::from_promise(*this);
    SetFrame(self);
    return ::TC::Task<void>(self);
}
} // namespace detail
} // namespace TC
