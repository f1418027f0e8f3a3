#pragma once
// Semaphore: a counting semaphore for tasks, converted threads and coroutines.
// Uncontended Acquire and Release: one CAS each.

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <cstdint>

namespace TC::Synchronization
{
/// ```cpp
/// Semaphore slots(4);
/// slots.Acquire(); Download(); slots.Release();
/// ```
/// - Release hands permits to suspended waiters in arrival order; newcomers (TryAcquire) may
///   barge while permits are handed out.
/// - At most kMaxPermits (2^61 - 1) permits; Release(n) takes 0 <= n <= kMaxPermits.
/// - Destruction: when no call runs; or by whoever took a permit once its Acquire (or
///   successful TryAcquire) returned, if no other call can start -- also a coroutine with no
///   executor resumed inline by the Release.
class Semaphore
{
public:
    explicit Semaphore(std::int64_t initial = 0) noexcept : core_(initial) {}

    static constexpr std::int64_t kMaxPermits = detail::SemaphoreCore::kMaxPermits;

    // Takes a permit if one is there. Never suspends. One CAS.
    bool TryAcquire() noexcept { return core_.TryAcquire(); }

    // Takes a permit, suspending (task or converted thread) until one is handed over.
    void Acquire()
    {
        if (!core_.TryAcquire())
            core_.Acquire();
    }

    // As Acquire; false if no permit came in `timeout` (no limit without EnableTimers). A
    // permit racing the deadline returns true or stays for the next acquire: none is lost.
    bool Acquire(Duration timeout)
    {
        return core_.TryAcquire() || core_.Acquire(timeout) == detail::AcquireResult::Acquired;
    }

    // Adds n permits, resuming up to n waiters. Any thread or callback; never suspends.
    void Release(std::int64_t n = 1) noexcept { core_.Release(n); }

    // Permits available now (a snapshot).
    std::int64_t Available() const noexcept { return core_.Available(); }

    // co_await sem.AcquireAsync(): resumes on the executor current when it suspended.
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
