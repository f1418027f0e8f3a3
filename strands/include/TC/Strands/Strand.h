#pragma once
// Strand: an executor that runs what it is given one at a time, in the order given, on another
// executor, so state touched only from one strand needs no lock whatever runs underneath.

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

namespace TC
{
namespace detail
{
template <class F>
bool PostTo(StrandCore& core, F&& fn, Admission admission)
{
    using Fn = std::decay_t<F>;
    if constexpr (kInlineCall<Fn>)
    {
        // Copies the callable's bytes only (it is trivially copyable): `fn` is unchanged either
        // way, so the full way below may still take it.
        if (core.TryQueueInline<Fn, F&&>(CallableSource(fn), admission))
            return true;
    }
    return PostWith(std::forward<F>(fn),
                    [&](PendingEntry& pending) { return core.Enqueue(pending, admission); });
}
} // namespace detail

// The unit a strand serialises is a task: a posted call, or a coroutine resumption from the
// moment it is resumed until it next suspends. A coroutine that suspends has left the strand;
// it comes back only if what it awaited resumes it here -- which every kernel wait
// (SuspendTaskAsync, so every TC::Synchronization primitive), ResumeOn{strand} and AsyncQueue do,
// because the strand states itself with ExecutorScope for each batch.
//
// One pump coroutine per strand runs up to StrandOptions::batch tasks per turn on the base, then
// queues itself again (work waiting), suspends (idle) or ends (closed). A submit that finds the
// pump busy only queues, so the steady state costs one lock per submit, one per chunk of up to
// 64 tasks in the pump (the first of a turn also begins it) and one to end the turn, and no
// allocation beyond a post's call where it is not held inline.
//
// Threads: every member may be called from any thread. Lifetime: the base must outlive the
// strand and run what the strand queued on it. ~Strand is Close(): queued work is dropped (a
// chain rooted in a DetachedTask is freed, a coroutine a Task owns is left to its owner), and a
// task running on another thread is waited for -- unless the destructor runs inside one of this
// strand's own tasks, where it does not wait: that task runs to its end, the pump then finds the
// strand closed and ends. The task must not touch its owner's other members after the release,
// as with any `delete this`. The same holds inside the destructor of a call the strand drops
// because the base refused its pump, or dropped it (a closed Strand as the base drops what it is
// handed): the drop goes on, freeing the rest, and the pump then ends. A base that drops the pump
// handed to it by a submit counts as refusing it: the submit throws std::runtime_error.
//
// What a task throws propagates out of the pump's resume() to whoever resumed it (the base); a
// replacement pump takes over the queue first, the rest of the throwing task's turn included, in
// order. If the replacement's frame cannot be allocated, nothing queued is lost or run: the
// strand stays not Idle() with no pump on the base (WaitIdle() waits) until the next Post or
// Submit makes one, which then runs the queue in order before its own work.
class TC_API Strand final : public IExecutor
{
public:
    explicit Strand(IExecutor& base, StrandOptions options = {});
    ~Strand();
    Strand(const Strand&) = delete;
    Strand& operator=(const Strand&) = delete;

    // Queues a call. A small trivially copyable callable (detail::kInlineCall: a lambda
    // capturing up to three pointers or references) is held in its queue entry and costs no
    // allocation; any other costs one, made before the lock. The callable is moved (or copied,
    // from a const lvalue) into the queue under the lock, last, once admission is decided and
    // the pump is on the base. Admitted until Close(), even after Seal(); once closed it is
    // dropped, never moved from. Throws what the allocation, the queue's growth, the pump's
    // frame, the base's submit or the callable's move throws; `fn` is then left as it was, for
    // the caller to run or drop -- the refused submitter gets its exception and its own work
    // back. A base refusal also abandons what was queued before it (freed as destruction frees
    // it) and the strand starts afresh on the next submit.
    template <class F>
    void Post(F&& fn)
    {
        detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Return);
    }

    // As Post, but refused once sealed or closed: returns false and leaves `fn` untouched, for
    // the caller to run itself. A base refusal throws, as Post does, with `fn` untouched too.
    template <class F>
    bool TryPost(F&& fn)
    {
        return detail::PostTo(*core_, std::forward<F>(fn), detail::Admission::Offer);
    }

    // IExecutor: queues a resumption. Admitted until Close() (the way every coroutine the strand
    // already admitted comes back); dropped once closed -- a ParkedWork's unowned chain freed.
    // Throws what growth, the pump's frame or the base throws, leaving the work with the caller.
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

    // Closes the offer door: TryPost/TrySubmit refuse from here on, under the lock that queues,
    // so an offer racing the seal is either queued before it (and runs) or refused after it.
    // Post/Submit stay admitted until Close(). The teardown is: Seal(), drain (WaitIdle(), plus
    // whatever the owner knows is suspended off the strand), then Close().
    void Seal() { core_->Seal(); }
    // Drops what is queued, refuses everything after, waits for a task running on another thread
    // (not for one this call runs inside). Idempotent.
    void Close() noexcept { core_->Close(); }

    // True when nothing is queued or running. A coroutine suspended off the strand is invisible.
    bool Idle() const { return core_->Idle(); }
    // Blocks until Idle(): a stackful task or a converted thread waits through the suspend
    // protocol (a host thread keeps pumping its scheduler meanwhile); a scheduler thread outside
    // a task yields in a loop. Woken when a turn ends with the queue empty. Never call it from
    // one of this strand's own tasks (std::logic_error): it would wait for itself.
    void WaitIdle() { core_->WaitIdle(); }

    // True inside one of this strand's tasks on this thread (also inside code such a task calls
    // synchronously). The way to ask where a task is; never compare executor pointers.
    bool RunningHere() const noexcept { return core_->RunningHere(); }

    // Where an awaitable should hand a coroutine back to come back to this strand; keeps the
    // strand's state alive while held.
    ResumeTarget Target() const { return ResumeTarget(core_.get(), core_); }

private:
    std::shared_ptr<detail::StrandCore> core_;
};
} // namespace TC
