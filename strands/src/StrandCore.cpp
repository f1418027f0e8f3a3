// StrandCore: the pump, the queue and the phase machine behind Strand and KeyedStrands.

#include <TC/Strands/ResumeTarget.h>
#include <TC/Strands/Strand.h>
#include <TC/Strands/detail/StrandCore.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace TC::detail
{
namespace
{
// The strand whose batch runs on this thread (innermost); read by ResumeTarget::Current().
thread_local StrandCore* tlRunningStrand = nullptr;
// The strand whose pump this thread is handing to the base outside the lock, or whose queue it
// is dropping after the base refused that hand-off: a Close() reached from in there (a dropped
// call that destroys the strand) must not wait for the hand-off, nor the turn, that only this
// thread can finish.
thread_local const StrandCore* tlHandingOff = nullptr;
// The strand whose pump this thread is handing to the base from PushLocked, under the strand's
// lock: a base that drops the pump at once (a closed Strand) destroys its frame in there, and
// PumpFrameDestroyed must not take that lock again.
thread_local const StrandCore* tlSubmittingLocked = nullptr;

// Marks, for its scope, what this thread is doing to a strand (one of the thread-locals above),
// and restores the mark it found there.
template <class Core>
class ScopedMark
{
public:
    ScopedMark(Core*& mark, Core* core) noexcept : mark_(mark), previous_(std::exchange(mark, core))
    {
    }
    ~ScopedMark() { mark_ = previous_; }
    ScopedMark(const ScopedMark&) = delete;
    ScopedMark& operator=(const ScopedMark&) = delete;

private:
    Core*& mark_;
    Core* previous_;
};

struct RunningStrandGuard : ScopedMark<StrandCore>
{
    explicit RunningStrandGuard(StrandCore* core) noexcept : ScopedMark(tlRunningStrand, core) {}
};

struct DroppingGuard : ScopedMark<const StrandCore>
{
    explicit DroppingGuard(const StrandCore* core) noexcept : ScopedMark(tlDroppingStrand, core) {}
};

// Around a hand-off of the pump to the base made outside the lock, while handOffs_ counts it: a
// base that drops the pump at once (a closed Strand) frees the queue from in there, and a Close()
// that a dropped call reaches must not wait for this hand-off, which only this thread can end.
struct HandOffGuard : ScopedMark<const StrandCore>
{
    explicit HandOffGuard(const StrandCore* core) noexcept : ScopedMark(tlHandingOff, core) {}
};

// Around PushLocked's hand-off of the pump to the base (see tlSubmittingLocked).
struct SubmitLockedGuard : ScopedMark<const StrandCore>
{
    explicit SubmitLockedGuard(const StrandCore* core) noexcept
        : ScopedMark(tlSubmittingLocked, core)
    {
    }
};

// Around the drop of a queue whose hand-off the base refused, while handOffs_ counts it.
struct RefusedHandOffGuard
{
    explicit RefusedHandOffGuard(const StrandCore* core) noexcept : dropping(core), handingOff(core)
    {
    }
    DroppingGuard dropping;
    HandOffGuard handingOff;
};

// A pump that died of a task's exception is left suspended at its final point by it, and must
// not be freed until the resume() that threw has returned; only the thread it threw on knows
// when, so the next death on that thread (or the thread's exit) frees it. It has let go of its
// strand by then (unhandled_exception): only the frame's memory waits here.
class DeadPumpReaper
{
public:
    DeadPumpReaper() = default;
    DeadPumpReaper(const DeadPumpReaper&) = delete;
    DeadPumpReaper& operator=(const DeadPumpReaper&) = delete;
    ~DeadPumpReaper()
    {
        if (dead_)
            dead_.destroy();
    }
    static void Adopt(std::coroutine_handle<> pump) noexcept
    {
        thread_local DeadPumpReaper reaper;
        if (auto previous = std::exchange(reaper.dead_, pump))
            previous.destroy();
    }

private:
    std::coroutine_handle<> dead_;
};

class PumpCoroutine
{
public:
    struct promise_type
    {
        promise_type() = default;
        promise_type(const promise_type&) = delete;
        promise_type& operator=(const promise_type&) = delete;
        // Before `keep` is released: the strand outlives the call.
        ~promise_type()
        {
            if (core)
                core->PumpFrameDestroyed(Self());
        }
        std::coroutine_handle<promise_type> Self() noexcept
        {
            return std::coroutine_handle<promise_type>::from_promise(*this);
        }
        PumpCoroutine get_return_object() noexcept { return PumpCoroutine{Self()}; }
        std::suspend_always initial_suspend() const noexcept { return {}; }
        std::suspend_never final_suspend() const noexcept { return {}; }
        void return_void() const noexcept {}
        void unhandled_exception()
        {
            // A task threw: a replacement pump already took over the queue (OnTaskThrew), and
            // the strand no longer names this frame. The frame lets go of the strand here, so a
            // kept keyed strand is free for reuse at once, not when the reaper frees the frame;
            // this may be the strand's last reference. The exception propagates to whoever
            // resumed this pump.
            core = nullptr;
            const std::shared_ptr<StrandCore> last = std::move(keep);
            DeadPumpReaper::Adopt(Self());
            throw;
        }

        StrandCore* core = nullptr;
        std::shared_ptr<StrandCore> keep; // the frame's reference (PumpReferences)
    };

    std::coroutine_handle<promise_type> handle;
};

struct EndTurnAwaiter
{
    StrandCore* core;
    bool batchSpent;
    bool keepRunning = true;

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> pump) noexcept
    {
        StrandCore* const strand = core;
        const bool spent = batchSpent;
        keepRunning = true; // what a later resumption answers; written before the hand-off
        const TurnEnd end = strand->EndTurn(pump, spent);
        if (end == TurnEnd::Suspend)
            return true; // from here the pump may already run elsewhere: touch nothing
        keepRunning = end == TurnEnd::Continue;
        return false;
    }
    bool await_resume() const noexcept { return keepRunning; }
};

// One pump per strand. Its promise holds the frame's reference to the strand (PumpReferences).
PumpCoroutine RunPump(StrandCore* const core)
{
    for (;;)
    {
        // A turn begins at its first take, under that take's lock; a strand closed while the
        // pump was queued runs nothing, and EndTurn ends the pump.
        const bool spent = core->RunBatch();
        if (!co_await EndTurnAwaiter{core, spent})
            co_return;
    }
}

} // namespace

std::shared_ptr<StrandCore> RunningStrandFor(IExecutor* executor) noexcept
{
    if (tlRunningStrand && executor == tlRunningStrand)
        return tlRunningStrand->shared_from_this();
    return {};
}

StrandCore::StrandCore(IExecutor& base, Strands::StrandOptions options)
    : base_(base), options_(std::move(options)), queue_(options_.initialCapacity)
{
    if (options_.batch == 0)
        options_.batch = 1;
    hooked_ = static_cast<bool>(options_.aroundTask);
}

StrandCore::~StrandCore()
{
    TakenEntries entries;
    {
        std::lock_guard<StrandLock> lock(mutex_);
        entries = queue_.TakeAll();
    }
    entries.DropAll();
}

void StrandCore::Submit(std::coroutine_handle<> handle)
{
    Submit(ParkedWork{handle, {}});
}

void StrandCore::Submit(ParkedWork work)
{
    PendingEntry pending{StrandEntry::Resumption(work.handle, work.abandon)};
    if (Enqueue(pending, Admission::Return) != EnqueueResult::Queued)
        work.Abandon(); // closed: dropped, as destruction drops it
}

EnqueueResult StrandCore::Enqueue(PendingEntry& pending, Admission admission)
{
    Abandoned abandoned;
    std::unique_lock<StrandLock> lock(mutex_);
    try
    {
        return PushLocked(pending, admission, abandoned);
    }
    catch (...)
    {
        // Whoever called us may hold no reference (a kernel wake-up through a raw IExecutor*),
        // and what is freed may release the last one.
        std::shared_ptr<StrandCore> keep = shared_from_this();
        lock.unlock();
        DropAbandoned(abandoned);
        OnStranded();
        throw;
    }
}

EnqueueResult StrandCore::PushLocked(PendingEntry& pending, Admission admission,
                                     Abandoned& abandoned)
{
    if (RefusesLocked(admission))
        return EnqueueResult::Refused;
    if (retired_)
        return EnqueueResult::Forward;
    // Every step that can throw comes before anything is published.
    queue_.Reserve();
    if (phase_ == PumpPhase::Idle)
    {
        if (!pump_)
            pump_ = MakePumpLocked(); // kept even if the base refuses: an idle pump is harmless
        // Under the lock, so a refusal is undone before anyone else can queue behind the pump;
        // a base that runs the pump at once finds it waiting for this lock in TakeChunk.
        phase_ = PumpPhase::Scheduled;
        try
        {
            {
                SubmitLockedGuard submitting(this);
                base_.Submit(ParkedWork{pump_, pump_}); // the pump is its own unowned root
            }
            if (pumpDroppedInline_)
            {
                // The base dropped the pump instead of queueing it (PumpFrameDestroyed): a
                // refusal, except that the frame is gone.
                pumpDroppedInline_ = false;
                pump_ = nullptr;
                throw std::runtime_error("TC::Strands::Strand: the base executor dropped the strand's "
                                         "pump instead of running it (a closed Strand as base?)");
            }
        }
        catch (...)
        {
            // The base is not running this strand: what was queued before (a queue left by a
            // pump that could not be replaced) is abandoned as destruction abandons it; the
            // refused submitter's own work was never queued; the strand starts afresh.
            phase_ = PumpPhase::Idle;
            abandoned.entries = queue_.TakeAll();
            waiters_.WakeAllLocked();
            throw;
        }
    }
    // Last, so every refusal above leaves the caller's callable untouched. The pump cannot read
    // the slot before this lock is released.
    StrandEntry& slot = queue_.Slot();
    slot = pending.entry;
    if (pending.constructInline)
        pending.constructInline(slot, pending.source);
    else if (pending.construct)
        slot.SetHeldCall(pending.construct(pending.storage, pending.source)); // a throw: not queued
    queue_.Commit();
    return EnqueueResult::Queued;
}

void StrandCore::DropAbandoned(Abandoned& abandoned) noexcept
{
    DroppingGuard dropping(this);
    abandoned.entries.DropAll();
}

void StrandCore::DropRefusedHandOff(std::unique_lock<StrandLock>& lock,
                                    PumpPhase meanwhile) noexcept
{
    lock.lock();
    TakenEntries entries = queue_.TakeAll();
    phase_ = meanwhile;
    lock.unlock();
    {
        RefusedHandOffGuard dropping(this);
        entries.DropAll();
    }
    lock.lock();
    HandOffFinished(lock);
}

void StrandCore::HandOffFinished(std::unique_lock<StrandLock>& lock) noexcept
{
    --handOffs_;
    (void)lock;
    waiters_.WakeAllLocked();
}

std::coroutine_handle<> StrandCore::MakePumpLocked()
{
    std::shared_ptr<StrandCore> keep = shared_from_this();
    PumpCoroutine pump = RunPump(this);
    pump.handle.promise().core = this;
    pump.handle.promise().keep = std::move(keep);
    return pump.handle;
}

void StrandCore::Seal()
{
    std::lock_guard<StrandLock> lock(mutex_);
    sealed_ = true;
}

void StrandCore::Close() noexcept
{
    TakenEntries entries;
    std::coroutine_handle<> idlePump;
    // Called from a call dropped by this thread's own refused hand-off (its destructor released
    // the strand's owner): that hand-off and its turn end after this returns, and find the strand
    // closed, as a task that destroys its strand does.
    const unsigned heldHere = tlHandingOff == this ? 1u : 0u;
    {
        std::unique_lock<StrandLock> lock(mutex_);
        closed_ = true;
        closedHint_.store(true, std::memory_order_relaxed); // a hint; the lock decides
        sealed_ = true;
        // A refused hand-off gives its submitter's work back out of the queue: let it finish.
        waiters_.WaitUntil(lock, [this, heldHere] { return handOffs_ == heldHere; });
        entries = queue_.TakeAll();
        if (phase_ == PumpPhase::Idle)
        {
            idlePump = std::exchange(pump_, nullptr);
            phase_ = PumpPhase::Exited;
        }
        else if (phase_ == PumpPhase::Running && !RunningHere() && heldHere == 0)
        {
            // The pump takes nothing more once closed, so this waits for one task at most.
            waiters_.WaitUntil(lock, [this] { return phase_ != PumpPhase::Running; });
        }
        waiters_.WakeAllLocked();
    }
    if (idlePump)
        idlePump.destroy(); // suspended and queued nowhere: ours to free
    DroppingGuard dropping(this);
    entries.DropAll();
}

bool StrandCore::Idle() const
{
    std::lock_guard<StrandLock> lock(mutex_);
    if (phase_ == PumpPhase::Running)
        return false;
    return queue_.Empty() || closed_;
}

void StrandCore::WaitIdle()
{
    if (RunningHere())
        throw std::logic_error("TC::Strands::Strand::WaitIdle: called from the strand's own task");
    std::unique_lock<StrandLock> lock(mutex_);
    waiters_.WaitUntil(lock, [this]
                       { return phase_ != PumpPhase::Running && (queue_.Empty() || closed_); });
}

bool StrandCore::RunningHere() const noexcept
{
    for (const ExecutorScope* scope = ExecutorScope::Innermost(); scope; scope = scope->Outer())
        if (scope->Executor() == this)
            return true;
    return false;
}

bool StrandCore::RunBatch()
{
    ExecutorScope scope(this); // once per batch, not per task
    RunningStrandGuard running(this);
    // Tasks are taken a chunk per lock, so a busy strand costs its submitters one lock each and
    // its pump one per chunk: a default batch (64) is one take. Each take moves the lock's line
    // away from the posters; 64 rather than 16 took a one-strand post from 50 to 42 ns (medians
    // of 8 interleaved runs) for 3.5 KB of the thread's stack.
    constexpr std::size_t kChunk = 64;
    // Left uninitialised: each take copies the entries in (StrandQueue::TakeChunk), and
    // zeroing 3.5 KB per turn was work the pump did for nothing.
    union ChunkStorage
    {
        ChunkStorage() noexcept {}
        StrandEntry entries[kChunk];
    } storage;
    StrandEntry* const chunk = storage.entries;
    std::size_t done = 0;
    while (done < options_.batch)
    {
        const std::size_t taken = TakeChunk(chunk, std::min(kChunk, options_.batch - done));
        if (taken == 0)
            return false;
        for (std::size_t i = 0; i < taken; ++i)
        {
            // Relaxed: a close on another thread waits for this turn to end, so a task or two
            // run after it began only delays it; one from a task of ours is seen at once.
            if (i > 0 && closedHint_.load(std::memory_order_relaxed))
            {
                DroppingGuard dropping(this); // closed: what was taken goes as the queue went
                for (std::size_t j = i; j < taken; ++j)
                    chunk[j].Drop();
                return false;
            }
            try
            {
                RunEntry(chunk[i]);
            }
            catch (...)
            {
                chunk[i].Drop();
                OnTaskThrew(chunk + i + 1, taken - i - 1);
                throw;
            }
            chunk[i].Drop(); // the call, after it ran; or a resumption its hook declined
        }
        done += taken;
    }
    return true;
}

std::size_t StrandCore::TakeChunk(StrandEntry* into, std::size_t most)
{
    std::lock_guard<StrandLock> lock(mutex_);
    if (closed_)
    {
        queue_.EndTake();
        return 0;
    }
    // The turn's first take begins it (later ones find it so): a lock of its own for that
    // moved the lock's line away from the posters once more per turn.
    phase_ = PumpPhase::Running;
    return queue_.TakeChunk(into, most);
}

void StrandCore::RunEntry(StrandEntry& entry)
{
    Strands::RunTask task(entry);
    if (hooked_) [[unlikely]]
        InvokeHook(task);
    else
        task();
}

void StrandCore::InvokeHook(Strands::RunTask& task)
{
    options_.aroundTask(task);
}

TurnEnd StrandCore::OnQueueDry()
{
    std::lock_guard<StrandLock> lock(mutex_);
    return IdleLocked();
}

TurnEnd StrandCore::IdleLocked() noexcept
{
    phase_ = PumpPhase::Idle;
    waiters_.WakeAllLocked();
    return TurnEnd::Suspend;
}

TurnEnd StrandCore::ExitLocked() noexcept
{
    pump_ = nullptr;
    phase_ = PumpPhase::Exited;
    waiters_.WakeAllLocked();
    return TurnEnd::Exit;
}

TurnEnd StrandCore::EndTurn(std::coroutine_handle<> pump, bool batchSpent)
{
    // Declared before the lock, so it is released after it: once the pump is handed off it may
    // run on elsewhere, retire and end, leaving `keep` the last reference, and ~StrandCore takes
    // mutex_ (destroying it under our own lock deadlocked this thread).
    std::shared_ptr<StrandCore> keep;
    std::unique_lock<StrandLock> lock(mutex_);
    queue_.EndTake();
    if (closed_)
        return ExitLocked();
    if (queue_.Empty())
    {
        if (RetiresWhenDry())
        {
            lock.unlock(); // the registry's lock comes first
            return OnQueueDry();
        }
        return IdleLocked();
    }
    if (!batchSpent)
        return TurnEnd::Continue;
    // The batch is spent and work is waiting: queue ourselves behind the base's other work.
    phase_ = PumpPhase::Scheduled;
    ++handOffs_;
    keep = shared_from_this();
    lock.unlock();
    try
    {
        HandOffGuard handingOff(this);
        base_.Submit(ParkedWork{pump, pump});
    }
    catch (...)
    {
        // Nobody to hand the refusal to: the queue is abandoned as destruction abandons it.
        DropRefusedHandOff(lock, PumpPhase::Running);
        if (closed_)
            return ExitLocked();
        // Posted while the queue was dropped (the lock was free then): this turn runs it, as
        // with a batch not yet spent, rather than leave it queued behind an Idle pump.
        if (!queue_.Empty())
            return TurnEnd::Continue;
        if (RetiresWhenDry())
        {
            lock.unlock(); // the registry's lock comes first; a keyed strand retires
            return OnQueueDry();
        }
        return IdleLocked();
    }
    lock.lock();
    HandOffFinished(lock);
    return TurnEnd::Suspend;
}

void StrandCore::OnTaskThrew(StrandEntry* untried, std::size_t untriedCount) noexcept
{
    std::unique_lock<StrandLock> lock(mutex_);
    pump_ = nullptr; // the dying pump is the reaper's now
    if (closed_)
    {
        ExitLocked();
        lock.unlock();
        DroppingGuard dropping(this); // closed: what the chunk still held goes as the queue went
        for (std::size_t i = 0; i < untriedCount; ++i)
            untried[i].Drop();
        return;
    }
    queue_.PutBack(untried, untriedCount); // ahead of everything queued since: order is kept
    phase_ = PumpPhase::Idle;
    if (queue_.Empty() && !RetiresWhenDry())
    {
        waiters_.WakeAllLocked();
        return;
    }
    // A replacement pump takes over the queue (a keyed one also retires through it).
    std::coroutine_handle<> next;
    try
    {
        next = MakePumpLocked();
    }
    catch (...)
    {
        // No memory for a pump, and none can be had without it: the queue waits (phase Idle,
        // entries kept, so Idle() is false) for the next submit to make one (Strand.h); a keyed
        // strand with nothing queued retires instead. The dying pump still holds the strand.
        waiters_.WakeAllLocked();
        lock.unlock();
        OnStranded();
        return;
    }
    pump_ = next;
    phase_ = PumpPhase::Scheduled;
    ++handOffs_;
    lock.unlock();
    try
    {
        HandOffGuard handingOff(this);
        base_.Submit(ParkedWork{next, next});
    }
    catch (...)
    {
        // Idle while the queue is dropped, so a submit meanwhile hands the pump to the base
        // itself, and a refusal reaches that submitter with its work.
        DropRefusedHandOff(lock, PumpPhase::Idle);
        lock.unlock();
        // As EndTurn's refusal retires through OnQueueDry: a keyed strand left dry with no pump
        // retires, once -- OnStranded re-checks under both locks, since a submit during the drop
        // may have started a pump that retires it itself.
        OnStranded();
        return;
    }
    lock.lock();
    HandOffFinished(lock);
}

void StrandCore::PumpFrameDestroyed(std::coroutine_handle<> pump) noexcept
{
    if (tlSubmittingLocked == this)
    {
        // Inside PushLocked's hand-off, on this thread, under our lock: it sees the flag once the
        // base returns and undoes the hand-off as a refusal.
        pumpDroppedInline_ = true;
        return;
    }
    TakenEntries entries;
    {
        std::lock_guard<StrandLock> lock(mutex_);
        if (pump_ != pump)
            return; // exited, closed or replaced: nothing refers to it
        // The base dropped the pump it had queued (it shut down): nothing will run the queue.
        pump_ = nullptr;
        entries = queue_.TakeAll();
        phase_ = closed_ ? PumpPhase::Exited : PumpPhase::Idle;
        waiters_.WakeAllLocked();
    }
    {
        DroppingGuard dropping(this);
        entries.DropAll();
    }
    OnStranded(); // the frame's own reference is still held: the promise's `keep` outlives this
}
} // namespace TC::detail

namespace TC::Strands
{
Strand::Strand(IExecutor& base, StrandOptions options)
    : core_(std::make_shared<detail::StrandCore>(base, std::move(options)))
{
}

Strand::~Strand()
{
    core_->Close();
}
} // namespace TC::Strands
