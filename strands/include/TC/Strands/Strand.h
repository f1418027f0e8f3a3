#pragma once
// Strand: an executor that runs what it is given one at a time, in order, on another executor, so
// state touched only from one strand needs no lock.
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
        // Copies the callable's bytes only: `fn` is unchanged, so the full way may still take it.
        if (core.TryQueueInline<Fn, F&&>(CallableSource(fn), admission))
            return true;
    }
    return PostWith(std::forward<F>(fn),
                    [&](PendingEntry& pending) { return core.Enqueue(pending, admission); });
}
} // namespace TC::detail

namespace TC::Strands
{

// It serialises tasks: a posted call, or a coroutine from its resumption to its next suspension.
// A coroutine comes back only if what it awaited resumes it here, as every kernel wait,
// ResumeOn{strand} and AsyncQueue do.
/// - One pump coroutine runs up to StrandOptions::batch tasks per turn on the base; a steady state
///   costs a lock per submit and per chunk of 64, no allocation but an out-of-line call's.
/// - Every member: any thread. The base must outlive the strand and run what it queued.
/// - ~Strand is Close(): queued work is dropped (DetachedTask chains freed, Task-owned coroutines
///   left to their owners); a task running elsewhere is waited for, but not from inside one of
///   its own tasks (which then must not touch its owner after, as with `delete this`), nor from a
///   call the strand drops because the base refused or dropped its pump.
/// - A base that drops the pump a submit handed it refuses it: the submit throws
///   std::runtime_error.
/// - A task's exception propagates out of the pump's resume() to the base; a replacement pump
///   runs the rest in order. If it cannot be allocated nothing is lost: the strand stays not
///   Idle() until the next Post or Submit makes one.
class TC_API Strand final : public IExecutor
{
public:
    explicit Strand(IExecutor& base, StrandOptions options = {});
    ~Strand();
    Strand(const Strand&) = delete;
    Strand& operator=(const Strand&) = delete;

    // Queues a call: a small trivially copyable one (kInlineCall: up to three pointers) inline,
    // any other in one allocation made before the lock; moved in last, once admitted.
    /// - Admitted until Close() (also after Seal()); once closed dropped, never moved from.
    /// - Throws what allocation, growth, the pump's frame, the base or the move throws, leaving
    ///   `fn` as it was; a base refusal also abandons what was queued before it (freed as
    ///   destruction frees it), and the strand starts afresh on the next submit.
    template <class F>
    void Post(F&& fn)
    {
        detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Return);
    }

    // As Post, but refused once sealed or closed: false, `fn` untouched (a base refusal throws,
    // `fn` untouched too).
    template <class F>
    bool TryPost(F&& fn)
    {
        return detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Offer);
    }

    // IExecutor: queues a resumption; admitted until Close(), dropped after (an unowned chain
    // freed). Throws what growth, the pump or the base throws, the work left with the caller.
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { core_->Submit(handle); }
    void Submit(ParkedWork work) override { core_->Submit(work); }

    // Refused once sealed or closed: false, and the work is left with the caller (not freed).
    bool TrySubmit(std::coroutine_handle<> handle) { return TrySubmit(ParkedWork{handle, {}}); }
    bool TrySubmit(ParkedWork work)
    {
        detail::PendingEntry pending{detail::StrandEntry::Resumption(work.handle, work.abandon)};
        return core_->Enqueue(pending, detail::Admission::Offer) == detail::EnqueueResult::Queued;
    }

    // Closes the offer door under the queueing lock: a racing offer runs or is refused. Post and
    // Submit stay admitted until Close(). Teardown: Seal(), drain (WaitIdle()), Close().
    void Seal() { core_->Seal(); }
    // Drops what is queued, refuses everything after, waits for a task running on another thread
    // (not one this call runs inside). Idempotent.
    void Close() noexcept { core_->Close(); }

    // True when nothing is queued or running. A coroutine suspended off the strand is invisible.
    bool Idle() const { return core_->Idle(); }
    // Blocks until Idle() (tasks and converted threads suspend, a host keeps pumping; a scheduler
    // thread outside a task yields). From one of its own tasks: std::logic_error.
    void WaitIdle() { core_->WaitIdle(); }

    // True inside one of this strand's tasks on this thread (and code it calls); never compare
    // executor pointers.
    bool RunningHere() const noexcept { return core_->RunningHere(); }

    // Where an awaitable hands a coroutine back to return here; keeps the strand's state alive.
    ResumeTarget Target() const { return ResumeTarget(core_.get(), core_); }

private:
    std::shared_ptr<detail::StrandCore> core_;
};
} // namespace TC::Strands
