#pragma once
// Strand: runs its work one at a time, in order, on another executor: state touched only from
// one strand needs no lock.
//   TC::Strands::Strand strand(scheduler);
//   strand.Post([&] { ++counter; });  // never concurrent with another task of this strand

#include <TC/Executor.h>
#include <TC/Strands/ResumeTarget.h>
#include <TC/Strands/RunTask.h>
#include <TC/Strands/StrandOptions.h>
#include <TC/Strands/detail/StrandCore.h>
#include <TC/detail/Export.h>

#include <coroutine>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>


namespace TC::detail
{
template <class F>
bool PostTo(StrandCore& core, F&& fn, Admission admission)
{
    using Fn = std::decay_t<F>;
    if constexpr (kInlineCall<Fn>)
    {
        // Copies bytes only: `fn` stays intact for the full way.
        if (core.TryQueueInline<Fn, F&&>(CallableSource(fn), admission))
            return true;
    }
    return PostWith(std::forward<F>(fn),
                    [&](PendingEntry& pending) { return core.Enqueue(pending, admission); });
}
} // namespace TC::detail

namespace TC::Strands
{

// Its tasks: a posted call, or a coroutine from resumption to next suspension. A coroutine comes
// back only if what it awaited resumes it here (kernel waits, ResumeOn{strand}, AsyncQueue do).
/// - A pump coroutine runs up to StrandOptions::batch tasks per turn on the base.
/// - Every member: any thread. The base must outlive the strand and run what it queued.
/// - ~Strand is Close(): queued work dropped (DetachedTask chains freed, Task-owned coroutines
///   left to their owners); a task running elsewhere is waited for, but not from inside one of
///   its own tasks (which then must not touch its owner, as after `delete this`), nor from a
///   call dropped because the base refused or dropped its pump.
/// - A base dropping the pump a submit handed it refuses it: the submit throws
///   std::runtime_error.
/// - A task's exception propagates out of the pump's resume() to the base; a new pump runs the
///   rest in order. If it cannot be allocated nothing is lost: not Idle() until the next Post or
///   Submit makes one.
class TC_API Strand final : public IExecutor
{
public:
    explicit Strand(IExecutor& base, StrandOptions options = {});
    ~Strand();
    Strand(const Strand&) = delete;
    Strand& operator=(const Strand&) = delete;

    // Queues a call: inline if kInlineCall, else in one allocation; moved in last, once admitted.
    /// - Admitted until Close() (also after Seal()); once closed dropped, never moved from.
    /// - Throws what allocation, growth, the pump's frame, the base or the move throws, `fn`
    ///   intact; a base refusal also abandons what was queued before it (freed as destruction
    ///   frees it); the next submit starts afresh.
    template <class F>
    void Post(F&& fn)
    {
        detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Return);
    }

    // As Post, but once sealed or closed false, `fn` untouched (a base refusal throws).
    template <class F>
    bool TryPost(F&& fn)
    {
        return detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Offer);
    }

    // IExecutor: admitted until Close(), dropped after (an unowned chain freed). Throws what
    // growth, the pump or the base throws, the work left with the caller.
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { core_->Submit(handle); }
    void Submit(ParkedWork work) override { core_->Submit(work); }

    // Once sealed or closed false, the work left with the caller (not freed).
    bool TrySubmit(std::coroutine_handle<> handle) { return TrySubmit(ParkedWork{handle, {}}); }
    bool TrySubmit(ParkedWork work)
    {
        detail::PendingEntry pending{detail::StrandEntry::Resumption(work.handle, work.abandon)};
        return core_->Enqueue(pending, detail::Admission::Offer) == detail::EnqueueResult::Queued;
    }

    // Refuses Try* (a racing one runs or is refused); Post, Submit admitted until Close().
    // Teardown: Seal(), WaitIdle(), Close().
    void Seal() { core_->Seal(); }
    // Drops what is queued, refuses all after, waits for a task running on another thread (not
    // one it runs inside). Idempotent.
    void Close() noexcept { core_->Close(); }

    // Nothing queued or running (a coroutine suspended off the strand does not count).
    bool Idle() const { return core_->Idle(); }
    // Blocks until Idle() (a host keeps pumping; a worker outside a task yields). From one of its
    // own tasks: std::logic_error.
    void WaitIdle() { core_->WaitIdle(); }

    // Inside one of its tasks on this thread (and code it calls); never compare executors.
    bool RunningHere() const noexcept { return core_->RunningHere(); }

    // Where an awaitable hands a coroutine back to; keeps the strand's state alive.
    ResumeTarget Target() const { return ResumeTarget(core_.get(), core_); }

private:
    std::shared_ptr<detail::StrandCore> core_;
};
} // namespace TC::Strands
