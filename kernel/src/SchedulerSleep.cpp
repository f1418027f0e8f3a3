// Sleeping: a sleeper registers, fences, re-checks the queues, then sleeps; a submitter
// enqueues, fences, then reads the sleeper count. One of the two always sees the other.

#include "SchedulerCore.h"

#include "Sanitizers.h"

#include <cstdint>
#include <chrono>
#include <mutex>
#include <thread>

namespace TC::detail
{
namespace
{
constexpr std::int64_t kSpinNanoseconds = 20000; // an idle worker spins about 20 us, then sleeps
} // namespace

void SchedulerCore::RegisterSleeper(Parker& parker)
{
    std::lock_guard lock(sleepLock_);
    parker.next = sleepList_;
    sleepList_ = &parker;
    parker.listed = true;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
}

void SchedulerCore::UnregisterSleeper(Parker& parker) noexcept
{
    std::lock_guard lock(sleepLock_);
    if (!parker.listed)
        return;
    for (Parker** link = &sleepList_; *link; link = &(*link)->next)
        if (*link == &parker)
        {
            *link = parker.next;
            break;
        }
    parker.listed = false;
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void SchedulerCore::StoreLoadBarrier() noexcept
{
#if TC_TSAN
    // ThreadSanitizer does not model fences (GCC refuses them); a read-modify-write on the
    // sleeper count orders the same two sides: both RMWs are in one modification order, so the
    // later one synchronizes with the earlier.
    sleepers_.fetch_add(0, std::memory_order_acq_rel);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

void SchedulerCore::WakeOne() noexcept
{
    StoreLoadBarrier();
    if (sleepers_.load(std::memory_order_relaxed) == 0)
        return;
    // Woken under the lock: the sleeper unregisters under it too, so its parker (which may live
    // on its stack) cannot go away while we touch it.
    std::lock_guard lock(sleepLock_);
    if (Parker* parker = sleepList_)
    {
        sleepList_ = parker->next;
        parker->listed = false;
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        parker->Wake();
    }
}

void SchedulerCore::WakeUpTo(std::size_t count) noexcept
{
    StoreLoadBarrier();
    if (sleepers_.load(std::memory_order_relaxed) == 0)
        return;
    std::lock_guard lock(sleepLock_); // as WakeOne: the sleepers unregister under it
    for (; count != 0 && sleepList_; --count)
    {
        Parker* parker = sleepList_;
        sleepList_ = parker->next;
        parker->listed = false;
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        parker->Wake();
    }
}

void SchedulerCore::WakeWorker(Worker& worker) noexcept
{
    StoreLoadBarrier(); // pairs with the sleeper's, as WakeOne's
    if (sleepers_.load(std::memory_order_relaxed) == 0)
        return;
    std::lock_guard lock(sleepLock_);
    if (!worker.parker.listed)
        return;
    for (Parker** link = &sleepList_; *link; link = &(*link)->next)
        if (*link == &worker.parker)
        {
            *link = worker.parker.next;
            break;
        }
    worker.parker.listed = false;
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    worker.parker.Wake();
}

void SchedulerCore::WakeAll() noexcept
{
    std::lock_guard lock(sleepLock_);
    while (Parker* parker = sleepList_)
    {
        sleepList_ = parker->next;
        parker->listed = false;
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        parker->Wake();
    }
}

void SchedulerCore::Idle(Worker& worker)
{
    const IdlePolicy policy = options.idlePolicy;
    if (policy != IdlePolicy::Sleep)
    {
        // Bounded by time, not by a count: a pause instruction lasts from 10 to 150 cycles
        // depending on the processor. The clock is first read after 32 pauses, not on entry, so
        // work that arrives at once (a worker between two posts) is taken without that read.
        std::int64_t until = 0;
        for (unsigned i = 1;; ++i)
        {
            if (HasQueuedWork(kLowestPriority) || worker.HasPinnedArrivals() ||
                exit_.load(std::memory_order_relaxed))
                return;
            if (policy == IdlePolicy::Yield)
                std::this_thread::yield();
            else
                CpuRelax();
            if (policy == IdlePolicy::SpinThenSleep && i % 32 == 0)
            {
                const std::int64_t now = SteadyNowNanoseconds();
                worker.tick = now;
                if (until == 0)
                    until = now + kSpinNanoseconds;
                else if (now >= until)
                    break;
            }
        }
    }
    RegisterSleeper(worker.parker);
    StoreLoadBarrier();
    if (!HasQueuedWork(kLowestPriority) && !worker.HasPinnedArrivals() &&
        !exit_.load(std::memory_order_acquire))
        SleepOnWord(worker.word, kWordWork);
    UnregisterSleeper(worker.parker);
    RefreshTick(worker); // after a sleep of any length
}

void SchedulerCore::AwaitDelivery(Worker& worker)
{
    // Woken by the delivery's enqueue; the count drops after it, which wakes nobody: a short nap.
    RegisterSleeper(worker.parker);
    StoreLoadBarrier();
    if (!HasQueuedWork(kLowestPriority) && !worker.HasPinnedArrivals())
        SleepOnWord(worker.word, kWordWork, Duration(std::chrono::milliseconds(1)));
    UnregisterSleeper(worker.parker);
}
} // namespace TC::detail
