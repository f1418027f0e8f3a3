#pragma once
// SemaphoreCore: the counting gate under Semaphore and Channel's SplitGate: count, waiter FIFO
// and lock in one word, and a Close that releases every waiter empty-handed.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaitNode.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstdint>

namespace TC::Synchronization::detail
{
enum class AcquireResult : std::uint32_t
{
    Pending = 0,
    Acquired = 1,
    Closed = 2,
    TimedOut = 3,
};

// Word: count (bits 2-63), waiters flag (bit 0), list lock (bit 1); WaitNodes live in the
// waiters' frames (tests/model/semaphore_word.pml).
/// - Nothing touches the object after the RMW making a permit available: its taker may destroy
///   it at once if no other call can start.
/// - FIFO among waiters; a newcomer's TryAcquire may take a permit first.
/// - At most kMaxPermits; Release(n) takes 0 <= n <= kMaxPermits (checked mode names both).
class TC_API SemaphoreCore
{
public:
    // The most permits held at once.
    static constexpr std::int64_t kMaxPermits = (std::int64_t{1} << 61) - 1;

    explicit SemaphoreCore(std::int64_t initial) noexcept
        : state_(static_cast<std::uint64_t>(initial) << kCountShift)
    {
        TC_CHECK(initial >= 0 && initial <= kMaxPermits, "a semaphore's count stays in range",
                 "a Semaphore was constructed with a negative count or more than kMaxPermits");
    }
    ~SemaphoreCore()
    {
        TC_CHECK(list_.IsEmpty(), "destroy a primitive only when nobody waits on it",
                 "a Semaphore or Channel was destroyed with waiters queued on it");
    }

    SemaphoreCore(const SemaphoreCore&) = delete;
    SemaphoreCore& operator=(const SemaphoreCore&) = delete;

    bool TryAcquire() noexcept
    {
        std::uint64_t state = state_.load(std::memory_order_relaxed);
        while (state >= kPermit)
            // acquire: the releaser's writes.
            if (state_.compare_exchange_weak(state, state - kPermit, std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        return false;
    }

    // Acquired; Closed if closed and none left (looked at again after the close, so no permit
    // released before Close is stranded); else Pending.
    AcquireResult TryAcquireOrClosed() noexcept
    {
        if (TryAcquire())
            return AcquireResult::Acquired;
        if (!closed_.load())
            return AcquireResult::Pending;
        return TryAcquire() ? AcquireResult::Acquired : AcquireResult::Closed;
    }

    // Acquired, or Closed once closed and empty. Suspends meanwhile.
    AcquireResult Acquire() { return Acquire(Duration::Infinite()); }
    // As Acquire, or TimedOut after `timeout`.
    AcquireResult Acquire(Duration timeout);

    void Release(std::int64_t n = 1) noexcept
    {
        TC_CHECK(n >= 0 && n <= kMaxPermits, "a semaphore's count stays in range",
                 "Release(n) with n < 0 or n > kMaxPermits");
        const std::uint64_t add = static_cast<std::uint64_t>(n) << kCountShift;
        std::uint64_t state = state_.load(std::memory_order_relaxed);
        for (;;)
        {
            if (state & kWaiters)
            {
                ReleaseToWaiters(n);
                return;
            }
            CheckRoomFor(state, n);
            // release: our writes to the taker. Last access: the taker may destroy it.
            if (state_.compare_exchange_weak(state, state + add, std::memory_order_release,
                                             std::memory_order_relaxed))
                return;
        }
    }

    // From now on Acquire returns Closed when empty; suspended waiters resume Closed. Idempotent.
    void Close() noexcept;
    bool IsClosed() const noexcept { return closed_.load(); }
    std::int64_t Available() const noexcept
    {
        return Count(state_.load(std::memory_order_relaxed));
    }

    class Node final : public WaitNode
    {
    public:
        explicit Node(SemaphoreCore& owner) noexcept : owner_(&owner) {}
        void OnSuspended(SuspendedTask handle) noexcept override;
        bool OnTimeout(SuspendedTask handle) noexcept override;
        // The core a Semaphore or Channel waits on.
        WaitTarget WaitedOn() const noexcept override
        {
            return {owner_, &typeid(SemaphoreCore), nullptr};
        }

    private:
        SemaphoreCore* owner_;
    };

    // co_await: yields Acquired or Closed.
    class [[nodiscard("co_await it")]] AcquireAwaiter
    {
    public:
        explicit AcquireAwaiter(SemaphoreCore & owner) noexcept
            : owner_(owner), node_(owner), inner_(&node_)
        {
        }
        bool await_ready() noexcept
        {
            return owner_.Ready(node_);
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        AcquireResult await_resume() const noexcept
        {
            return AcquireResult(node_.status);
        }

    private:
        SemaphoreCore& owner_;
        Node node_;
        SuspendAwaiter inner_;
    };

    // co_await: yields Acquired, Closed or TimedOut.
    class [[nodiscard("co_await it")]] AcquireForAwaiter
    {
    public:
        AcquireForAwaiter(SemaphoreCore & owner, Duration timeout) noexcept
            : owner_(owner), node_(owner), inner_(&node_, timeout)
        {
        }
        bool await_ready() noexcept
        {
            return owner_.Ready(node_);
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        AcquireResult await_resume() noexcept
        {
            // Settle the timer always: a handed-over permit leaves it armed.
            const bool resumed = inner_.await_resume();
            if (node_.status == 0 && !resumed)
                return AcquireResult::TimedOut;
            return AcquireResult(node_.status);
        }

    private:
        SemaphoreCore& owner_;
        Node node_;
        SuspendForAwaiter inner_;
    };

private:
    friend class Node;

    // An acquire's non-suspending part; sets node.status when it decides.
    bool Ready(WaitNode& node) noexcept
    {
        node.status = static_cast<std::uint32_t>(TryAcquireOrClosed());
        return node.status != 0;
    }

    // Bit 0: the list holds a waiter (under the lock); bit 1: the lock; bits 2-63: the count.
    static constexpr std::uint64_t kWaiters = 1;
    static constexpr std::uint64_t kQueueLock = 2;
    static constexpr unsigned kCountShift = 2;
    static constexpr std::uint64_t kPermit = std::uint64_t{1} << kCountShift;
    static constexpr std::int64_t Count(std::uint64_t state) noexcept
    {
        return static_cast<std::int64_t>(state >> kCountShift);
    }
    // Range check of a Release's n (0 <= n <= kMaxPermits).
    static void CheckRoomFor([[maybe_unused]] std::uint64_t state,
                             [[maybe_unused]] std::int64_t n) noexcept
    {
        TC_CHECK(Count(state) <= kMaxPermits - n, "a semaphore's count stays in range",
                 "Release would raise the count above kMaxPermits");
    }

    // Release with a waiter queued: hands permits out under the lock.
    void ReleaseToWaiters(std::int64_t n) noexcept;
    // Takes the list's lock; returns the word as left (lock bit set). With addIfNoWaiters, a
    // word without waiters gets that added instead, returning 0.
    std::uint64_t LockQueue(std::uint64_t addIfNoWaiters = 0) noexcept;
    // Releases the lock, clearing the waiter flag if the list is empty.
    void UnlockQueue() noexcept;

    std::atomic<std::uint64_t> state_;
    std::atomic<bool> closed_{false};
    WaitList list_; // under the word's lock
};
} // namespace TC::Synchronization::detail
