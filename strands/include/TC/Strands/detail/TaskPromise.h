#pragma once
// The machinery behind Task<T> (Task.h): the frame owner, the chain links that free a chain
// deepest first, the promise and its start handshake. Users include <TC/Strands/Task.h>.

#include <TC/Checked.h>
#include <TC/Strands/Awaitable.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/detail/FrameCache.h>
#include <TC/Strands/detail/MarkedAwait.h>
#include <TC/detail/CoroutineZone.h>
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

    static void* operator new(std::size_t size) { return AllocateFrame(size); }
    static void operator delete(void* frame, std::size_t size) noexcept { FreeFrame(frame, size); }

    // Names the chain to a scheduler's coroutine zone when first resumed.
    struct InitialAwaiter
    {
        TaskPromiseBase& promise;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<>) const noexcept {}
        void await_resume() const noexcept { IdentifyCoroutine(&promise.identity_); }
    };

    InitialAwaiter initial_suspend() noexcept { return {*this}; }
    FinalAwaiter final_suspend() const noexcept { return {}; }
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    const Strands::StopToken& Token() const noexcept { return token_; }
    std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }
    CoroutineIdentity& Identity() noexcept { return identity_; }

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
        if constexpr (requires { awaiting.Identity(); })
        {
            CoroutineIdentity& chain = awaiting.Identity();
            if (chain.id == 0)
                chain.id = NextUniqueId(); // once per chain: the frames it awaits share it
            identity_ = chain;
        }
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
    CoroutineIdentity identity_;
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
