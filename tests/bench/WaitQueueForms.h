#pragma once
// The library's Semaphore, Mutex and ConditionVariable written on WaitQueue the way the
// many-waiters guide teaches (WaitForResult, HandOffDone), with the same semantics: a FIFO
// hand-off of permits and of the lock, a condition variable whose Notify under the mutex cannot
// be missed. The benchmarks run each beside the library's own in one run, which decides whether
// the library's primitive is worth re-expressing.

#include <TC/Synchronization.h>
#include <TC/WaitForResult.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace TCBench
{
class WaitQueueSemaphore
{
public:
    bool TryAcquire() noexcept
    {
        std::int64_t count = count_.load(std::memory_order_relaxed);
        while (count > 0)
            if (count_.compare_exchange_weak(count, count - 1, std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        return false;
    }
    void Acquire()
    {
        TC::WaitForResult(waiters_, [this]() noexcept { return TryAcquire(); });
    }
    // The oldest waiter gets the permit; with none queued, the count does, and a waiter queued
    // meanwhile is woken to take it.
    void Release() noexcept
    {
        if (TC::HandOffDone(waiters_))
            return;
        count_.fetch_add(1, std::memory_order_release);
        waiters_.ResumeOne();
    }

private:
    std::atomic<std::int64_t> count_{0};
    TC::WaitQueue waiters_;
};

// Contenders counts the owner and everyone waiting, so an unlock knows whether to pass the lock
// on; a pass that finds nobody queued yet leaves a grant for the next waiter's re-check.
class WaitQueueMutex
{
public:
    void lock()
    {
        if (contenders_.fetch_add(1, std::memory_order_acquire) == 0)
            return;
        TC::WaitForResult(waiters_, [this]() noexcept
                          { return granted_.exchange(false, std::memory_order_acquire); });
    }
    void unlock() noexcept
    {
        if (contenders_.fetch_sub(1, std::memory_order_release) == 1)
            return;
        if (TC::HandOffDone(waiters_))
            return;
        granted_.store(true, std::memory_order_release);
        waiters_.ResumeOne();
    }

private:
    std::atomic<std::int64_t> contenders_{0};
    std::atomic<bool> granted_{false};
    TC::WaitQueue waiters_;
};

// Each Wait draws a ticket under the mutex; a Notify admits the oldest tickets not yet admitted,
// so a waiter that has released the mutex but not yet queued sees its admission in its re-check,
// and a waiter resumed for a later ticket waits again: no wake-up is missed and none is spurious.
// (Untimed waits only: a timed-out ticket would swallow a later NotifyOne.)
class WaitQueueConditionVariable
{
public:
    template <class Predicate>
    void Wait(std::unique_lock<TC::Synchronization::Mutex>& lock, Predicate pred)
    {
        while (!pred())
        {
            const std::uint64_t ticket = tickets_.fetch_add(1, std::memory_order_relaxed);
            lock.unlock();
            TC::WaitForResult(waiters_, [this, ticket]() noexcept
                              { return admitted_.load(std::memory_order_acquire) > ticket; });
            lock.lock();
        }
    }
    void NotifyOne() noexcept { Admit(1); }
    void NotifyAll() noexcept { Admit(~std::uint64_t{0}); }

private:
    void Admit(std::uint64_t count) noexcept
    {
        std::uint64_t admitted = admitted_.load(std::memory_order_relaxed);
        std::uint64_t target;
        do
        {
            const std::uint64_t tickets = tickets_.load(std::memory_order_relaxed);
            if (admitted >= tickets)
                return; // nobody waits
            target = tickets - admitted > count ? admitted + count : tickets;
        } while (!admitted_.compare_exchange_weak(admitted, target, std::memory_order_release,
                                                  std::memory_order_relaxed));
        if (count == 1)
            waiters_.ResumeOne();
        else
            waiters_.ResumeAll();
    }

    std::atomic<std::uint64_t> tickets_{0};
    std::atomic<std::uint64_t> admitted_{0};
    TC::WaitQueue waiters_;
};
} // namespace TCBench
