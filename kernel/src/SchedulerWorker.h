#pragma once
// A scheduler's worker: its queues, its caches and what a switch leaves for the next context; and
// the constants its queues and caches share with SchedulerCore.

#include "LocalQueue.h"
#include "Parker.h"
#include "SharedQueue.h"
#include "Task.h"
#include "ThreadState.h"
#include "context/Context.h"
#include "context/FloatingPointControl.h"

#include <TC/Scheduler.h>
#include <TC/detail/DeadlineClock.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace TC::detail
{
class SchedulerCore;

inline constexpr std::size_t PriorityIndex(Priority priority) noexcept
{
    return static_cast<std::size_t>(priority);
}
// The least urgent level: a pick up to it takes anything ready.
inline constexpr Priority kLowestPriority = Priority::Low;

// What the context that was switched to must do for the one that switched away.
enum class PostSwitch : std::uint8_t
{
    None,
    Suspend,      // call OnSuspended for postTask
    SuspendTimed, // call OnSuspended, then arm postTask's timer
    Finish,       // postTask ended: release its stack
    Requeue,      // queue postTask on postTarget (yield or move)
};

// A queued item: a Task* (bit 0 clear) or a coroutine frame address with bit 0 set.
inline constexpr std::uintptr_t kCoroutineTag = 1;
// User-space addresses fit in 48 bits (x86-64, and AArch64 without 52-bit mappings): the bits
// above carry the inbox's placement count (SchedulerCore::inbox_).
inline constexpr unsigned kInboxItemBits = 48;
inline constexpr std::uintptr_t kInboxItemMask = (std::uintptr_t{1} << kInboxItemBits) - 1;
// Every 61st pick a worker looks at the shared queue before its own (fairness).
inline constexpr unsigned kFairnessInterval = 61;
// Every 32nd shared-first pick that a yield asks for also refreshes the worker's tick.
inline constexpr unsigned kTickYieldInterval = 32;
// The top bit of SchedulerCore::enqueuing_: the destructor has made its last look, and new work
// from outside the core's threads is refused; the bits below count submissions in flight.
inline constexpr std::uint32_t kEnqueueClosed = std::uint32_t{1} << 31;
// Task blocks go back where they came from: a block a worker's task started with returns to that
// worker's cache (up to kBlockCacheLimit) wherever it is freed last, one started from another
// thread to the scheduler's pool (up to kBlockPoolLimit), so neither kind of starter allocates
// in a steady state; the rest go back to operator delete, so a burst does not pin its memory.
inline constexpr std::size_t kBlockCacheLimit = 1024;
inline constexpr std::size_t kBlockPoolLimit = 4096;
inline constexpr std::size_t kBlockBatch = 32;

// What a submission from outside a core's threads brings (SchedulerCore::EnterFromOutside).
enum class Arrival : std::uint8_t
{
    New,    // work the core does not count yet (a start, a coroutine, a moving task): refusable
    Resume, // a resumed task of the core's own, already counted live: never refused
};

// A pump turn in progress on a host worker (SchedulerCore::Pump): how far a task that ends may
// go on starting fresh tasks on its own stack without returning to the pump loop
// (StartOnFinishedStack), so that the turn's count, deadline and priorities still hold.
struct PumpTurn
{
    std::size_t ran = 0;   // items run so far, those started on a finished task's stack included
    std::size_t limit;     // it runs no more than this many
    std::int64_t deadline; // 0: none; else nothing new starts once the steady clock passed it
    Priority lowest;       // the lowest priority it runs

    // The one budget test of the pump loop and of a start on a finished stack: the first item
    // always (if the count allows one), then within the count and before the deadline -- by
    // the deadline clock, an upper bound of the steady clock's now at half its cost where the
    // TSC serves, so a turn may end up to its slack (25 us) early, never late.
    bool MayRunAnother() const noexcept
    {
        return ran < limit && (ran == 0 || deadline == 0 || DeadlineNowNanoseconds() < deadline);
    }
};

struct Worker
{
    SchedulerCore* core = nullptr;
    unsigned index = 0;
    bool directSwitch = true; // a suspending task switches straight to the next local task
    ExecutionContext context;  // the worker loop's own context (its thread's stack)
    // What a task takes when it starts here: the worker thread's floating-point control state,
    // read after the threadStart hook (a host pump's, once per turn that runs something), so a
    // task never inherits what the task before it on this thread changed and left behind.
    FloatingPointControl taskStartControl;
    // The thread (ThreadState::pumpSerial) whose stack `context` describes: a host worker's
    // changes with the thread pumping it (SchedulerCore::Pump).
    std::uint64_t contextThread = 0;
    LocalQueue local[kPriorityCount]; // by Priority; only this worker's thread touches them
    bool LocalQueuesEmpty() const noexcept
    {
        for (const LocalQueue& queue : local)
            if (!queue.IsEmpty())
                return false;
        return true;
    }
    Task* current = nullptr;
    ThreadState* threadState = nullptr; // the thread running this worker's loop or pump right now
    const ExecutorScope* taskScope = nullptr; // scope in force when the current task was entered
    PumpTurn* pumpTurn = nullptr; // host workers: the pump running now (not when shuffling)
    PostSwitch post = PostSwitch::None;
    Task* postTask = nullptr;
    SchedulerCore* postTarget = nullptr;
    unsigned fairnessCountdown = kFairnessInterval;
    // Yields left until the next shared-first pick a yield causes refreshes `tick` (RefreshTick).
    unsigned yieldsUntilTick = kTickYieldInterval;
    // The worker's coarse clock (the deadline clock's nanoseconds), read every kFairnessInterval
    // picks, every kTickYieldInterval yields, when it wakes from idle and at the start of a pump
    // turn that runs work: each suspension of a task here is stamped with it (DumpTasks' "for").
    std::int64_t tick = 0;
    bool preferShared = false; // set by a yield: the next pick looks at the shared queue first
    // A task that yielded back to this worker's loop (queued again already): the loop's next pick
    // passes over it while other work is ready (SchedulerCore::TryDequeue). 0: none.
    std::uintptr_t yielded = 0;
    // A shared-queue item taken just before the older inbox item it queued behind: the pick
    // after that one (SchedulerCore::FromSharedQueue).
    std::uintptr_t deferred = 0;
    std::uint64_t shuffleState = 0;     // host pumps with SchedulerOptions::shuffleSeed
    std::atomic<std::uint32_t> word{0}; // futex word an idle worker sleeps on
    Parker parker;
    std::vector<StackMemory> stackCache; // default-size stacks released on this worker
    FreeTaskBlock* blockCache = nullptr;  // task blocks freed on this worker
    std::size_t blockCacheCount = 0;
    // This core's tasks started and ended on the thread running this worker: written by that
    // thread alone (a load and a release store, no read-modify-write), read by Live(). Their
    // own line: wakers write `word`.
    alignas(64) std::atomic<std::uint64_t> started{0};
    std::atomic<std::uint64_t> ended{0};
    // Items this worker took from the shared queue or the inbox, written the same way (by the
    // thread running it, or pumping it, alone), read by Stop's first look (TakenShared).
    std::atomic<std::uint64_t> takenShared{0};
    // Pinned tasks (TaskOptions::worker) queued for this worker from elsewhere: the count is
    // raised before the enqueue and lowered after the dequeue, so never below the truth. Its own
    // line: read on every pick, written only when pinned work crosses threads.
    alignas(64) std::atomic<std::uint32_t> pinnedCount{0};
    SharedQueue pinned;
    bool HasPinnedArrivals() const noexcept
    {
        return pinnedCount.load(std::memory_order_relaxed) != 0;
    }
    std::thread thread;
};

// Reads the deadline clock into the worker's coarse clock (Worker::tick).
inline void RefreshTick(Worker& worker) noexcept
{
    worker.tick = DeadlineNowNanoseconds();
    worker.yieldsUntilTick = kTickYieldInterval;
}
} // namespace TC::detail
