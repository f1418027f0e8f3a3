#pragma once
// Semaphore: a counting semaphore for tasks, converted threads and coroutines.

#include <TC/Synchronization/detail/BusyCount.h>
#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <cstdint>

namespace TC::Synchronization
{
// Holds a count of permits. Acquire takes one, suspending while there is none; Release gives
// permits back and hands them to suspended waiters in arrival order. A TryAcquire that arrives
// while permits are being handed out may take one first (waiters are FIFO among themselves,
// newcomers can barge; that keeps the uncontended path at one CAS).
//
// Destruction: when no call on it is running -- no Acquire of any form (a waiter that was
// handed its permit is still inside its Acquire until it returns: it waits out the Releases in
// flight below, and a timed one its timeout) and no Release. An acquire returns only once every
// Release that was running has left the semaphore (the one that made its permit visible still
// reads the waiter count after that), so a waiter may destroy it after its Acquire (or
// successful TryAcquire) returned if no other Release can start. Exception: a
// coroutine with no executor is resumed inline, inside the Release that served it, and returns
// into it; it must leave the semaphore alive.
class Semaphore
{
public:
    explicit Semaphore(std::int64_t initial = 0) noexcept : core_(initial) {}

    // Takes a permit if one is there. Never suspends. One CAS (and one load when it succeeds).
    bool TryAcquire() noexcept
    {
        if (!core_.TryAcquire())
            return false;
        busy_.DrainBeforeDestroy();
        return true;
    }

    // Takes a permit, suspending (a task or a converted thread) until Release hands one over.
    void Acquire()
    {
        if (!core_.TryAcquire())
            core_.Acquire();
        busy_.DrainBeforeDestroy();
    }

    // As Acquire, but gives up after `timeout`: false if no permit came in time. Unlimited
    // without EnableTimers.
    bool Acquire(Duration timeout)
    {
        const bool acquired =
            core_.TryAcquire() || core_.Acquire(timeout) == detail::AcquireResult::Acquired;
        busy_.DrainBeforeDestroy();
        return acquired;
    }

    // Adds n permits and resumes up to n waiters (each with its permit). Any thread, also a
    // callback. Never suspends.
    void Release(std::int64_t n = 1) noexcept
    {
        detail::BusyCount::Scope busy(busy_); // ends with the last access
        core_.Release(n);
    }

    // Permits available now (a snapshot).
    std::int64_t Available() const noexcept { return core_.Available(); }

    // co_await sem.AcquireAsync(): the coroutine form of Acquire; continues on the executor that
    // was current when it suspended.
    class [[nodiscard("co_await it")]] AcquireAwaiter
    {
    public:
        explicit AcquireAwaiter(Semaphore & owner) noexcept : owner_(owner), inner_(owner.core_) {}
        bool await_ready() noexcept
        {
            return inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        void await_resume() const noexcept
        {
            owner_.busy_.DrainBeforeDestroy();
        }

    private:
        Semaphore& owner_;
        detail::SemaphoreCore::AcquireAwaiter inner_;
    };

    // co_await sem.AcquireAsync(timeout): yields false if no permit came in time.
    class [[nodiscard("co_await it")]] AcquireForAwaiter
    {
    public:
        AcquireForAwaiter(Semaphore & owner, Duration timeout) noexcept
            : owner_(owner), inner_(owner.core_, timeout)
        {
        }
        bool await_ready() noexcept
        {
            return inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        bool await_resume() noexcept
        {
            const bool acquired = inner_.await_resume() == detail::AcquireResult::Acquired;
            owner_.busy_.DrainBeforeDestroy();
            return acquired;
        }

    private:
        Semaphore& owner_;
        detail::SemaphoreCore::AcquireForAwaiter inner_;
    };

    AcquireAwaiter AcquireAsync() noexcept { return AcquireAwaiter(*this); }
    AcquireForAwaiter AcquireAsync(Duration timeout) noexcept
    {
        return AcquireForAwaiter(*this, timeout);
    }

private:
    detail::SemaphoreCore core_;
    detail::BusyCount busy_; // Releases in flight, which an acquire waits out before it returns
};
} // namespace TC::Synchronization
