#pragma once
// Semaphore: a counting semaphore for tasks, converted threads and coroutines.

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <cstdint>

namespace TC::Synchronization
{
// Holds a count of permits. Acquire takes one, suspending while there is none; Release gives
// permits back and hands them to suspended waiters in arrival order. A TryAcquire that arrives
// while permits are being handed out may take one first (waiters are FIFO among themselves,
// newcomers can barge; that keeps the uncontended path at one CAS each for Release and
// Acquire). At most kMaxPermits (2^61 - 1) permits at a time; Release(n) takes 0 <= n <=
// kMaxPermits.
//
// Destruction: when no call on it is running. Whoever took a permit may destroy it as soon as
// its Acquire (or successful TryAcquire) returned, if no other call can start: a Release does
// not touch the semaphore after the read-modify-write that makes its permits available, and
// resumes the waiters it served only after it (detail/SemaphoreCore.h). That holds also for a
// coroutine with no executor, which the Release that served it resumes inline.
class Semaphore
{
public:
    explicit Semaphore(std::int64_t initial = 0) noexcept : core_(initial) {}

    static constexpr std::int64_t kMaxPermits = detail::SemaphoreCore::kMaxPermits;

    // Takes a permit if one is there. Never suspends. One CAS.
    bool TryAcquire() noexcept { return core_.TryAcquire(); }

    // Takes a permit, suspending (a task or a converted thread) until Release hands one over.
    void Acquire()
    {
        if (!core_.TryAcquire())
            core_.Acquire();
    }

    // As Acquire, but gives up after `timeout`: false if no permit came in time. Unlimited
    // without EnableTimers.
    /// - A permit handed over as the deadline passes makes the wait return true; one that
    ///   arrives after the timeout took the waiter back stays for the next acquire: none is lost.
    bool Acquire(Duration timeout)
    {
        return core_.TryAcquire() || core_.Acquire(timeout) == detail::AcquireResult::Acquired;
    }

    // Adds n permits and resumes up to n waiters (each with its permit). Any thread, also a
    // callback. Never suspends.
    void Release(std::int64_t n = 1) noexcept { core_.Release(n); }

    // Permits available now (a snapshot).
    std::int64_t Available() const noexcept { return core_.Available(); }

    // co_await sem.AcquireAsync(): the coroutine form of Acquire; continues on the executor that
    // was current when it suspended.
    class [[nodiscard("co_await it")]] AcquireAwaiter
    {
    public:
        explicit AcquireAwaiter(Semaphore & owner) noexcept : inner_(owner.core_) {}
        bool await_ready() noexcept
        {
            return inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        void await_resume() const noexcept {}

    private:
        detail::SemaphoreCore::AcquireAwaiter inner_;
    };

    // co_await sem.AcquireAsync(timeout): yields false if no permit came in time.
    class [[nodiscard("co_await it")]] AcquireForAwaiter
    {
    public:
        AcquireForAwaiter(Semaphore & owner, Duration timeout) noexcept
            : inner_(owner.core_, timeout)
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
            return inner_.await_resume() == detail::AcquireResult::Acquired;
        }

    private:
        detail::SemaphoreCore::AcquireForAwaiter inner_;
    };

    AcquireAwaiter AcquireAsync() noexcept { return AcquireAwaiter(*this); }
    AcquireForAwaiter AcquireAsync(Duration timeout) noexcept
    {
        return AcquireForAwaiter(*this, timeout);
    }

private:
    detail::SemaphoreCore core_;
};
} // namespace TC::Synchronization
