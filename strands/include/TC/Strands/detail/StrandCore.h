#pragma once
// detail::StrandCore: a strand's shared state (queue, pump, phase), held by its owner, the pump
// and every ResumeTarget parked on it; the executor its tasks see as current.

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
// Guards a few words of queue and phase, never across a task.
using StrandLock = SpinLock;

enum class PumpPhase : std::uint8_t
{
    Idle,      // suspended, queued nowhere (or no pump frame yet)
    Scheduled, // queued on the base
    Running,   // running a turn
    Exited,    // ended: closed, or a keyed strand retired and not kept
};

// An offer (TryPost/TrySubmit) is refused once sealed; a return (Post/Submit) once closed.
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

// One submission: a coroutine entry, or how to move the callable in once admitted; a refusal
// leaves the callable untouched.
struct PendingEntry
{
    StrandEntry entry;
    void* storage = nullptr;
    CallBase* (*construct)(void* storage, void* source) = nullptr;
    void (*constructInline)(StrandEntry& entry, void* source) noexcept = nullptr;
    void* source = nullptr;
};

// What a refused base submit abandons: earlier entries, freed outside every lock (DropAbandoned).
struct Abandoned
{
    TakenEntries entries;
};

class StrandCore;

// The strand whose dropped work this thread frees: a destructor's submit to it is refused.
TC_API inline thread_local const StrandCore* tlDroppingStrand = nullptr;

class TC_API StrandCore : public IExecutor, public std::enable_shared_from_this<StrandCore>
{
public:
    StrandCore(IExecutor& base, Strands::StrandOptions options);
    StrandCore(const StrandCore&) = delete;
    StrandCore& operator=(const StrandCore&) = delete;
    virtual ~StrandCore();

    // IExecutor: a return. Dropped (a chain nobody owns freed) once closed.
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override;
    void Submit(ParkedWork work) override;
    // Held by a coroutine parked through the kernel until handed back.
    std::shared_ptr<void> KeepAlive() noexcept override { return weak_from_this().lock(); }

    // Queues the entry; refused: nothing taken. Throws what room, pump, base submit or move
    // throw, nothing of the caller's queued or consumed; a base refusal abandons what was queued
    // before it.
    virtual EnqueueResult Enqueue(PendingEntry& pending, Admission admission);

    // A post's inline common case (open strand, pump queued or running, tail room): true; else
    // false and the caller Enqueues. Keyed: only under the registry's lock, never retired.
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

    // Under Mutex(): whether this submission is refused (closed, sealed offer, or this thread
    // dropping this strand's work).
    bool RefusesLocked(Admission admission) const noexcept
    {
        return closed_ || (admission == Admission::Offer && sealed_) || tlDroppingStrand == this;
    }

    // Under Mutex(): queues, handing the pump to the base first if this wakes it. Throws before
    // publishing; a base refusal fills `abandoned` for DropAbandoned after unlock.
    EnqueueResult PushLocked(PendingEntry& pending, Admission admission, Abandoned& abandoned);
    // Outside every lock: frees what was abandoned, refusing its destructors' submits.
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

    // The pump frame's reference, released when a task's exception kills it.
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
    virtual void InvokeHook(Strands::RunTask& task);
    // At the end of a turn that left the queue empty, with no lock held.
    virtual TurnEnd OnQueueDry();
    virtual bool RetiresWhenDry() const noexcept { return false; }
    // After a failure that may leave the queue dry and unpumped (no lock, caller's reference
    // held): a keyed strand so left retires.
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
    // After the base refused an unlocked hand-off: drops the queue, phase `meanwhile`, ends the
    // hand-off; returns locked.
    void DropRefusedHandOff(std::unique_lock<StrandLock>& lock, PumpPhase meanwhile) noexcept;

    IExecutor& base_;
    Strands::StrandOptions options_;
    mutable StrandLock mutex_;
    // The pump's last chunk stays reserved for PutBack after a throw.
    StrandQueue queue_;
    PumpPhase phase_ = PumpPhase::Idle;
    std::coroutine_handle<> pump_;
    unsigned handOffs_ = 0; // hand-offs to the base in flight outside the lock
    bool pumpDroppedInline_ = false; // the base dropped the pump inside PushLocked's hand-off
    bool sealed_ = false;
    bool closed_ = false;
    // closed_, readable without the lock: the pump checks it between the tasks of a chunk.
    std::atomic<bool> closedHint_{false};
    mutable WaitList waiters_{"TC::Strands::Strand"}; // Close and WaitIdle
};

// The address of a post's callable; the one place that casts away const.
template <class T>
void* CallableSource(T& fn) noexcept
{
    return const_cast<std::remove_const_t<T>*>(std::addressof(fn));
}

// A post to a strand core (or via `enqueue` a keyed registry): inline if it fits, else storage
// first, moved in once admitted. True when queued; false (refused) and a throw leave `fn` as is.
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
