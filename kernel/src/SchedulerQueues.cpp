// Queues: the shared queue and its inbox, the workers' own queues, and the pick of the next item.

#include "SchedulerInternals.h"

#include "Sanitizers.h"

#include <new>
#include <utility>

namespace TC::detail
{
namespace
{
// TSan cannot see the queue's fences (SharedQueue.h); these give it the
// happens-before edge the queue really provides, from every enqueue to the dequeues after it.
void TsanRelease([[maybe_unused]] const void* queue) noexcept
{
#if TC_TSAN
    __tsan_release(const_cast<void*>(queue));
#endif
}

void TsanAcquire([[maybe_unused]] const void* queue) noexcept
{
#if TC_TSAN
    __tsan_acquire(const_cast<void*>(queue));
#endif
}
} // namespace

void SchedulerCore::EnqueueFromOutside(std::uintptr_t item, Priority priority, Arrival arrival)
{
    if (Worker* host = HostWorkerOfThisThread()) // never while the destructor runs
    {
        host->local[static_cast<std::size_t>(priority)].Push(item);
        return;
    }
    // Counted from before the admission until the item is queued and a worker woken: the
    // destructor's last look waits for an admitted item to be queued, and once it is queued its
    // task may run and finish, and the scheduler be destroyed, while this call (from the timer
    // thread or any other) is still waking a worker -- ~SchedulerCore waits for it as well.
    EnterFromOutside(arrival, "Submit");
    LeaveFromOutsideAtExit leave{this};
    EnqueueShared(item, priority);
}

void SchedulerCore::EnqueueShared(std::uintptr_t item, Priority priority)
{
    TC_CHECK((item & ~kInboxItemMask) == 0, "address above 48 bits",
             "a task or coroutine frame lives above the 48-bit address range the scheduler's "
             "queues assume");
    // The inbox when it is free and the queue looks empty: that this thread sees the queue empty
    // means everything it queued before was taken. Workers look at the inbox before the queue,
    // and an item queued while the inbox is full carries the inbox's placement count, so a
    // worker that looked at the inbox just before it filled and then took the later item from
    // the queue runs the inbox's first (FromSharedQueue): one thread's submissions start in the
    // order made (on one worker; with several, two may be taken at once). Host-pumped
    // schedulers keep to the queue (their seeded shuffle).
    std::uintptr_t behind = 0; // the placement count of the inbox item this one queues behind
    if (priority == Priority::Normal && HasWorkerThreads())
    {
        std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
        if ((word & kInboxItemMask) == 0
            && global_[PriorityIndex(Priority::Normal)].size_approx() == 0)
        {
            std::uintptr_t count = (word >> kInboxItemBits) + 1;
            if (count >> (64 - kInboxItemBits))
                count = 1; // wrapped: 0 means "not behind anything"
            // acq_rel: the item's writes happen before the taker's CAS (acquire); an RMW, so
            // WakeOne's barrier orders it before the sleeper check as it does an enqueue.
            if (inbox_.compare_exchange_strong(word, (count << kInboxItemBits) | item,
                                               std::memory_order_acq_rel, std::memory_order_relaxed))
            {
                WakeOne();
                return;
            }
        }
        if ((word & kInboxItemMask) != 0)
            behind = word & ~kInboxItemMask;
    }
    auto& queue = global_[PriorityIndex(priority)];
    const bool urgent = priority < Priority::Normal;
    if (urgent)
        sharedUrgent_.value.fetch_add(1, std::memory_order_relaxed); // before: never below the truth
    TsanRelease(&queue);
    if (!queue.enqueue(item | behind))
    {
        if (urgent)
            sharedUrgent_.value.fetch_sub(1, std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    WakeOne();
}

namespace
{
// A batch's queue items, read from its tasks: each tagged with the inbox placement it queues
// behind (0: none), as EnqueueShared tags one item.
struct TaggedItems
{
    Task* const* at;
    std::uintptr_t behind;
    std::uintptr_t operator*() const noexcept { return reinterpret_cast<std::uintptr_t>(*at) | behind; }
    TaggedItems& operator++() noexcept
    {
        ++at;
        return *this;
    }
    TaggedItems operator++(int) noexcept
    {
        TaggedItems before = *this;
        ++at;
        return before;
    }
};
} // namespace

void SchedulerCore::EnqueueBulk(Worker* worker, Task* const* tasks, std::size_t count,
                                Priority priority)
{
    if (tasks[0]->pin != kAnyWorker) [[unlikely]]
        return EnqueuePinnedBulk(worker && worker->core == this ? worker : nullptr, tasks, count);
    if (worker && options.workerCount <= 1)
    {
        // Its own queue (the one worker, or the host between or inside pumps): room first, so
        // the batch is queued whole or not at all.
        LocalQueue& queue = worker->local[PriorityIndex(priority)];
        queue.Reserve(queue.Size() + count);
        for (std::size_t i = 0; i < count; ++i)
            queue.TryPush(reinterpret_cast<std::uintptr_t>(tasks[i]));
        return;
    }
    for (std::size_t i = 0; i < count; ++i)
        TC_CHECK((reinterpret_cast<std::uintptr_t>(tasks[i]) & ~kInboxItemMask) == 0,
                 "address above 48 bits",
                 "a task lives above the 48-bit address range the scheduler's queues assume");
    // Behind an item in the inbox, as EnqueueShared queues one: this thread's earlier start
    // there still runs first (FromSharedQueue). The batch itself keeps out of the inbox.
    std::uintptr_t behind = 0;
    if (priority == Priority::Normal && HasWorkerThreads())
    {
        const std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
        if ((word & kInboxItemMask) != 0)
            behind = word & ~kInboxItemMask;
    }
    auto& queue = global_[PriorityIndex(priority)];
    const bool urgent = priority < Priority::Normal;
    if (urgent)
        sharedUrgent_.value.fetch_add(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
    TsanRelease(&queue);
    if (!queue.enqueue_bulk(TaggedItems{tasks, behind}, count))
    {
        if (urgent)
            sharedUrgent_.value.fetch_sub(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    WakeUpTo(count);
}

void SchedulerCore::EnqueuePinned(Worker* worker, Task* task)
{
    Worker& target = *workers_[task->pin];
    const auto item = reinterpret_cast<std::uintptr_t>(task);
    if (worker == &target)
    {
        target.local[PriorityIndex(task->priority)].Push(item);
        return;
    }
    target.pinnedCount.fetch_add(1, std::memory_order_relaxed); // before: never below the truth
    TsanRelease(&target.pinned);
    if (!target.pinned.enqueue(item))
    {
        target.pinnedCount.fetch_sub(1, std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    WakeWorker(target);
}

void SchedulerCore::EnqueuePinnedBulk(Worker* worker, Task* const* tasks, std::size_t count)
{
    Worker& target = *workers_[tasks[0]->pin];
    if (worker == &target)
    {
        LocalQueue& queue = target.local[PriorityIndex(tasks[0]->priority)];
        queue.Reserve(queue.Size() + count); // room first: all or nothing
        for (std::size_t i = 0; i < count; ++i)
            queue.TryPush(reinterpret_cast<std::uintptr_t>(tasks[i]));
        return;
    }
    target.pinnedCount.fetch_add(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
    TsanRelease(&target.pinned);
    if (!target.pinned.enqueue_bulk(TaggedItems{tasks, 0}, count))
    {
        target.pinnedCount.fetch_sub(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    WakeWorker(target);
}

void SchedulerCore::ResumePinned(Worker* worker, Task* task)
{
    const bool outside = !worker || worker->core != this;
    if (outside)
        EnterFromOutside(Arrival::Resume, "ResumeTask");
    LeaveFromOutsideAtExit leave{outside ? this : nullptr};
    EnqueuePinned(outside ? nullptr : worker, task);
}

std::uintptr_t SchedulerCore::TakePinned(Worker& worker) noexcept
{
    std::uintptr_t item = 0;
    while (worker.pinned.try_dequeue(item))
    {
        TsanAcquire(&worker.pinned);
        worker.pinnedCount.fetch_sub(1, std::memory_order_relaxed);
        try
        {
            worker.local[PriorityIndex(reinterpret_cast<const Task*>(item)->priority)].Push(item);
        }
        catch (...)
        {
            return item; // no room: run it now
        }
    }
    return 0;
}

std::uintptr_t SchedulerCore::TakenFromShared(Worker& worker, std::size_t priority,
                                              std::uintptr_t item) noexcept
{
    TsanAcquire(&global_[priority]);
    CountTakenShared(worker);
    if (priority < PriorityIndex(Priority::Normal))
        sharedUrgent_.value.fetch_sub(1, std::memory_order_relaxed);
    return item;
}

std::uintptr_t SchedulerCore::FromSharedQueue(Worker& worker, std::uintptr_t queued) noexcept
{
    const std::uintptr_t item = queued & kInboxItemMask;
    const std::uintptr_t behind = queued & ~kInboxItemMask;
    if (behind == 0)
        return item;
    std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
    // Only the very placement it queued behind, still unclaimed: a later one (another count) is
    // newer than `item` and waits its turn.
    if ((word & ~kInboxItemMask) != behind || (word & kInboxItemMask) == 0 || worker.deferred != 0)
        return item;
    if (!inbox_.compare_exchange_strong(word, behind, std::memory_order_acquire,
                                        std::memory_order_relaxed))
        return item; // another worker took it
    CountTakenShared(worker);
    worker.deferred = item;
    return word & kInboxItemMask;
}

inline std::uintptr_t SchedulerCore::TakeNext(Worker& worker, Priority lowest) noexcept
{
    const std::size_t last = PriorityIndex(lowest);
    if (worker.shuffleState != 0)
    {
        // Seeded pumping: gather everything ready, then take a pseudo-random one (xorshift64).
        for (std::size_t p = 0; p <= last; ++p)
        {
            std::uintptr_t item = 0;
            while (global_[p].try_dequeue(item))
            {
                item = TakenFromShared(worker, p, item) &
                       kInboxItemMask; // never behind the inbox here
                try
                {
                    worker.local[p].Push(item);
                }
                catch (...)
                {
                    return item; // no room to shuffle: run it now
                }
            }
            if (const std::size_t size = worker.local[p].Size())
            {
                std::uint64_t x = worker.shuffleState;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                worker.shuffleState = x;
                worker.local[p].SwapToFront(static_cast<std::size_t>(x % size));
                return worker.local[p].Pop();
            }
        }
        return 0;
    }
    if (worker.deferred != 0)
        return std::exchange(worker.deferred, 0); // next after the inbox item it queued behind
    if (worker.HasPinnedArrivals()) [[unlikely]]
        if (const std::uintptr_t unplaced = TakePinned(worker))
            return unplaced;
    const bool globalFirst = --worker.fairnessCountdown == 0 || worker.preferShared;
    if (globalFirst)
    {
        // The worker's coarse clock: read when the count of picks ran out, and every
        // kTickYieldInterval yields of a worker whose tasks keep yielding (a yield restarts it).
        if (!worker.preferShared || --worker.yieldsUntilTick == 0) [[unlikely]]
            RefreshTick(worker);
        worker.fairnessCountdown = kFairnessInterval;
        worker.preferShared = false;
    }
    std::uintptr_t item = 0;
    // The urgent levels' shared queues only when they may hold something (one shared load).
    const bool urgent = MayHaveSharedUrgent();
    for (std::size_t p = 0; p <= last; ++p)
    {
        const bool shared = urgent || p >= PriorityIndex(Priority::Normal);
        // The inbox holds a Normal item that came before everything its submitter queued since.
        if (p == PriorityIndex(Priority::Normal))
        {
            // Claimed with a compare-exchange that keeps the placement count.
            std::uintptr_t word = inbox_.load(std::memory_order_relaxed);
            while ((word & kInboxItemMask) != 0)
                if (inbox_.compare_exchange_weak(word, word & ~kInboxItemMask,
                                                 std::memory_order_acquire, std::memory_order_relaxed))
                {
                    CountTakenShared(worker);
                    return word & kInboxItemMask;
                }
        }
        if (globalFirst && shared && global_[p].try_dequeue(item))
            return FromSharedQueue(worker, TakenFromShared(worker, p, item));
        if ((item = worker.local[p].Pop()) != 0)
            return item;
        if (shared && global_[p].try_dequeue(item))
            return FromSharedQueue(worker, TakenFromShared(worker, p, item));
    }
    return 0;
}

std::uintptr_t SchedulerCore::TryDequeue(Worker& worker, Priority lowest) noexcept
{
    const std::uintptr_t item = TakeNext(worker, lowest);
    // A task that yielded back to this loop is picked first only when it is alone in its queue
    // and nothing of its priority or above waits in the shared queue (the uncommon case).
    if (worker.yielded != 0 && std::exchange(worker.yielded, 0) == item) [[unlikely]]
        return PassOverYielded(worker, lowest, item);
    return item;
}

std::uintptr_t SchedulerCore::PassOverYielded(Worker& worker, Priority lowest,
                                              std::uintptr_t yielded) noexcept
{
    // It steps aside for the next most urgent item -- of a lower priority, too -- and goes back
    // where it was, so a yield always lets other ready work run.
    const std::uintptr_t other = TryDequeue(worker, lowest); // no longer passes over anything
    if (other == 0)
        return yielded;
    // Taken from that queue just now, and nothing filled its slot since: the push never grows it.
    worker.local[PriorityIndex(reinterpret_cast<const Task*>(yielded)->priority)].Push(yielded);
    return other;
}

bool SchedulerCore::HasQueuedWork(Priority lowest) const noexcept
{
    if (lowest >= Priority::Normal && (inbox_.load(std::memory_order_relaxed) & kInboxItemMask) != 0)
        return true;
    for (std::size_t p = 0; p <= PriorityIndex(lowest); ++p)
        if (global_[p].size_approx() != 0)
            return true;
    return false;
}

std::size_t SchedulerCore::QueuedApprox(const Worker* worker, Priority lowest) const noexcept
{
    std::size_t count
        = lowest >= Priority::Normal && (inbox_.load(std::memory_order_relaxed) & kInboxItemMask) != 0;
    for (std::size_t p = 0; p <= PriorityIndex(lowest); ++p)
    {
        count += global_[p].size_approx();
        if (worker)
            count += worker->local[p].Size();
    }
    return count;
}

std::uint64_t SchedulerCore::TakenShared() const noexcept
{
    // relaxed: it only bounds how long Stop's first look waits; the second drain, after Close,
    // is what runs everything admitted.
    std::uint64_t taken = 0;
    for (const auto& worker : workers_)
        taken += worker->takenShared.load(std::memory_order_relaxed);
    return taken;
}
} // namespace TC::detail
