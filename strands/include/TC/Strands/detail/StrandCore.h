#pragma once
// detail::StrandCore: a strand's shared state -- its queue, its pump and its phase -- held by the
// Strand (or a KeyedStrands registry), by the pump's frame and by every ResumeTarget that parked
// on it. It is the IExecutor a strand's tasks see as current.

#include <TC/Executor.h>
#include <TC/Strands/RunTask.h>
#include <TC/Strands/StrandOptions.h>
#include <TC/Strands/detail/StrandQueue.h>
#include <TC/Strands/detail/WaitList.h>
#include <TC/detail/Export.h>
#include <TC/detail/SpinLock.h>

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

namespace TC::detail
{
// A strand's lock guards a few words of queue and phase: held for a push or a chunk, never across
// a task, so spinning beats a futex (a mutex's sleep and wake made posts to a busy strand
// syscalls).
using StrandLock = SpinLock;

enum class PumpPhase : std::uint8_t
{
    Idle,      // suspended, queued nowhere (or no pump frame yet)
    Scheduled, // queued on the base
    Running,   // running a turn
    Exited,    // ended: closed, or a keyed strand retired and not kept
};

// Who is asking: an offer (TryPost/TrySubmit) is refused once sealed; a return (Post/Submit, how
// a coroutine the strand already admitted comes back) is admitted until closed.
enum class Admission : std::uint8_t
{
    Offer,
    Return,
};

enum class EnqueueResult : std::uint8_t
{
    Queued,
    Refused, // closed (or sealed, for an offer): nothing was taken from the caller
    Forward, // a retired keyed strand: route the entry through the registry
};

// What the end of a turn does with the pump.
enum class TurnEnd : std::uint8_t
{
    Continue, // more work and batch not spent: run another turn now
    Suspend,  // idle, or queued on the base again
    Exit,     // closed or retired: the pump ends and frees its frame
};

// What one submission brings: a coroutine entry, or how to move the caller's callable into the
// queue (inline in the entry, or into storage allocated beforehand) -- done under the lock, once
// admission is decided and the pump (if this submit wakes it) is on the base, so a refusal of
// either kind leaves the callable untouched.
struct PendingEntry
{
    StrandEntry entry;
    void* storage = nullptr;
    CallBase* (*construct)(void* storage, void* source) = nullptr;
    void (*constructInline)(StrandEntry& entry, void* source) noexcept = nullptr;
    void* source = nullptr;
};

// What a refused base submit abandons: the entries queued before the refused submitter's, freed
// outside every lock (StrandCore::DropAbandoned).
struct Abandoned
{
    TakenEntries entries;
};

class StrandCore;

// The strand whose dropped work this thread is freeing: a destructor that submits to it again
// is refused (dropped too), rather than handed to a base that has just refused, or to a closed
// strand.
TC_API inline thread_local const StrandCore* tlDroppingStrand = nullptr;

class TC_API StrandCore : public IExecutor, public std::enable_shared_from_this<StrandCore>
{
public:
    StrandCore(IExecutor& base, StrandOptions options);
    StrandCore(const StrandCore&) = delete;
    StrandCore& operator=(const StrandCore&) = delete;
    virtual ~StrandCore();

    // IExecutor: a return. Dropped (a chain nobody owns freed) once closed.
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override;
    void Submit(ParkedWork work) override;
    // A coroutine parked through the kernel (SuspendTaskAsync) holds this state until it is
    // handed back, so a strand destroyed meanwhile is never reached through a dangling pointer.
    std::shared_ptr<void> KeepAlive() noexcept override { return weak_from_this().lock(); }

    // Queues the pending entry. Refused: nothing constructed or taken. Throws what making room,
    // making the pump, the base's submit or the callable's move throws; nothing of the caller's
    // is then queued or consumed (the callable is moved only after everything else succeeded)
    // -- and a base refusal abandons what was queued before it (DropAbandoned).
    virtual EnqueueResult Enqueue(PendingEntry& pending, Admission admission);

    // A post's common case, inline in the poster: a callable held in its entry, the strand
    // open, its pump already queued or running, a free slot in the tail segment. Queues it and
    // returns true. Otherwise does nothing and returns false: the caller goes the full way
    // (Enqueue), which decides again under the lock. A keyed strand's core is tried only under
    // its registry's lock, found as its key's strand (KeyedRegistry::TryQueueInline); a retired
    // one sends a post the full way regardless.
    template <class Fn, class Src>
    bool TryQueueInline(void* source, Admission admission) noexcept
    {
        std::lock_guard<StrandLock> lock(mutex_);
        if (RefusesLocked(admission) || retired_ || phase_ == PumpPhase::Idle || !queue_.HasRoom())
            return false;
        StrandEntry& slot = queue_.Slot();
        InlineCall<Fn>::template ConstructFrom<Src>(slot, source);
        queue_.Commit();
        return true;
    }

    // Under Mutex(): whether a submission of this kind is refused -- closed, sealed (an offer),
    // or made by this thread while it drops this strand's work. The one admission rule of both
    // ways a post is queued (TryQueueInline and PushLocked).
    bool RefusesLocked(Admission admission) const noexcept
    {
        return closed_ || (admission == Admission::Offer && sealed_) || tlDroppingStrand == this;
    }

    // Under Mutex(): queues, handing the pump to the base first if this submit wakes it (the
    // base's Submit runs under the strand's lock; it must not run the pump inline, as IExecutor
    // requires). Throws before publishing anything; on a base refusal `abandoned` holds what the
    // caller must DropAbandoned once it has unlocked everything.
    EnqueueResult PushLocked(PendingEntry& pending, Admission admission, Abandoned& abandoned);
    // Outside every lock: frees what a base refusal abandoned, refusing any submit to this
    // strand its destructors make (the base has just refused).
    void DropAbandoned(Abandoned& abandoned) noexcept;

    void Seal();
    void Close() noexcept;
    bool Idle() const;
    void WaitIdle();
    bool RunningHere() const noexcept;
    StrandLock& Mutex() const noexcept { return mutex_; }

    // ---- the pump's side ----
    bool RunBatch(); // true when the batch was spent
    TurnEnd EndTurn(std::coroutine_handle<> pump, bool batchSpent);
    void PumpFrameDestroyed(std::coroutine_handle<> pump) noexcept;

    // References a strand's pump frame holds: its promise's, released when a task's exception
    // kills the pump (the dead frame itself is freed later, on the thread it died on).
    static constexpr long PumpReferences = 1;
    bool HasPumpLocked() const noexcept { return static_cast<bool>(pump_); }
    bool QueueEmptyLocked() const noexcept { return queue_.Empty(); }
    bool ClosedLocked() const noexcept { return closed_; }
    bool RetiredLocked() const noexcept { return retired_; }
    // Neither queued on the base nor running a turn.
    bool PumpIdleLocked() const noexcept { return phase_ == PumpPhase::Idle; }
    std::coroutine_handle<> PumpLocked() const noexcept { return pump_; }

protected:
    // KeyedStrands' extensions.
    virtual void InvokeHook(RunTask& task);
    // At the end of a turn that left the queue empty, with no lock held.
    virtual TurnEnd OnQueueDry();
    virtual bool RetiresWhenDry() const noexcept { return false; }
    // After a failure that may have left the queue dry with no pump queued or running, with no
    // lock held and a reference held by the caller: a keyed strand that is so retires, as no
    // turn will retire it.
    virtual void OnStranded() noexcept {}
    TurnEnd IdleLocked() noexcept;
    TurnEnd ExitLocked() noexcept;

    bool retired_ = false; // keyed: no longer its key's strand; entries go through the registry
    bool hooked_ = false;

private:
    std::coroutine_handle<> MakePumpLocked();
    std::size_t TakeChunk(StrandEntry* into, std::size_t most);
    void RunEntry(StrandEntry& entry);
    void OnTaskThrew(StrandEntry* untried, std::size_t count) noexcept;
    void HandOffFinished(std::unique_lock<StrandLock>& lock) noexcept;
    // After the base refused a hand-off made outside the lock (`lock` not held): drops the queue
    // with the lock free, the phase `meanwhile`, then ends the hand-off; returns with it held.
    void DropRefusedHandOff(std::unique_lock<StrandLock>& lock, PumpPhase meanwhile) noexcept;

    IExecutor& base_;
    StrandOptions options_;
    mutable StrandLock mutex_;
    // The queue (under the lock). The running pump's last chunk stays reserved in it, so a task
    // that throws can put the rest back in front (StrandQueue::PutBack).
    StrandQueue queue_;
    PumpPhase phase_ = PumpPhase::Idle;
    std::coroutine_handle<> pump_;
    unsigned handOffs_ = 0; // hand-offs to the base in flight outside the lock
    bool pumpDroppedInline_ = false; // the base dropped the pump inside PushLocked's hand-off
    bool sealed_ = false;
    bool closed_ = false;
    // closed_, readable without the lock: the pump checks it between the tasks of a chunk.
    std::atomic<bool> closedHint_{false};
    mutable WaitList waiters_{"TC::Strand"}; // Close and WaitIdle
};

// The address of a post's callable as the entry constructors take it (ConstructFrom<Src> copies
// from it, or moves from it when Src is an rvalue reference): one place casts away the const.
template <class T>
void* CallableSource(T& fn) noexcept
{
    return const_cast<std::remove_const_t<T>*>(std::addressof(fn));
}

// A post to a strand core (or, through `enqueue`, a keyed strand's registry): a callable that
// fits is held inline in its queue entry (no allocation); any other gets storage first, and is
// moved in under the lock once admitted. True when queued; false (refused: closed, or sealed for
// an offer) and a throw both leave `fn` as it was.
template <class F, class EnqueueFn>
bool PostWith(F&& fn, EnqueueFn&& enqueue)
{
    using Fn = std::decay_t<F>;
    PendingEntry pending;
    pending.source = CallableSource(fn);
    if constexpr (kInlineCall<Fn>)
    {
        pending.constructInline = &InlineCall<Fn>::template ConstructFrom<F&&>;
        return enqueue(pending) == EnqueueResult::Queued;
    }
    else
    {
        pending.storage = ::operator new(sizeof(Call<Fn>));
        pending.construct = &Call<Fn>::template ConstructFrom<F&&>;
        EnqueueResult result;
        try
        {
            result = enqueue(pending);
        }
        catch (...)
        {
            ::operator delete(pending.storage); // never constructed: the move comes last
            throw;
        }
        if (result != EnqueueResult::Queued)
            ::operator delete(pending.storage);
        return result == EnqueueResult::Queued;
    }
}
} // namespace TC::detail
