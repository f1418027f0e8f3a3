#pragma once
// SemaphoreCore: the counting gate under Semaphore and Channel -- a lock-free count with a
// spinlock-guarded FIFO of waiters, and a Close that releases every waiter empty-handed.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaitNode.h>

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

// Design: the count never goes below zero; TryAcquire is one CAS, Release one fetch_add and one
// load while nobody waits. A waiter that finds no permit publishes a WaitNode (in its own frame)
// under the spinlock, bumps `waiters_`, and re-checks the count under the lock; Release adds to
// the count and then looks at `waiters_`. Both sides are seq_cst, so either the waiter's re-check
// sees the permit or Release sees the waiter and hands permits out, FIFO, under the lock. A
// newcomer's TryAcquire may take a permit before a queued waiter (no strict FIFO under barging),
// which keeps the uncontended path free of the lock. Resumes happen after the lock is released.
class SemaphoreCore
{
public:
    explicit SemaphoreCore(std::int64_t initial) noexcept : count_(initial) {}
    ~SemaphoreCore()
    {
        TC_CHECK(list_.IsEmpty(), "destroy a primitive only when nobody waits on it",
                 "a Semaphore or Channel was destroyed with waiters queued on it");
    }
    SemaphoreCore(const SemaphoreCore&) = delete;
    SemaphoreCore& operator=(const SemaphoreCore&) = delete;

    bool TryAcquire() noexcept
    {
        // seq_cst, not relaxed, although the CAS decides when there is a permit: a waiter's
        // re-check after publishing itself is this load, and when it reads no permit it must
        // take part in the store-buffering pair with Release (its fetch_add then its load of
        // waiters_). Relaxed, both could read the old values on AArch64 without LSE (an LL/SC
        // publish is no barrier) and the waiter would sleep beside a permit. A plain load on x86.
        std::int64_t count = count_.load();
        while (count > 0)
            if (count_.compare_exchange_weak(count, count - 1)) // seq_cst: pairs with Release
                return true;
        return false;
    }

    // Acquired if a permit is there; Closed if the core is closed and none is left; else
    // Pending. The count is looked at again once closed_ reads true: a permit released before
    // the Close is visible from then on (the load synchronizes with Close's store), but it may
    // have landed after the first look, and answering Closed then would strand it -- a Channel
    // value sent before Close, dropped by a Receive that said "closed and drained".
    AcquireResult TryAcquireOrClosed() noexcept
    {
        if (TryAcquire())
            return AcquireResult::Acquired;
        if (!closed_.load())
            return AcquireResult::Pending;
        return TryAcquire() ? AcquireResult::Acquired : AcquireResult::Closed;
    }

    // Acquired, or Closed once closed and no permit is left. Suspends meanwhile.
    AcquireResult Acquire();
    // As Acquire, or TimedOut after `timeout`.
    AcquireResult Acquire(Duration timeout);

    void Release(std::int64_t n = 1) noexcept
    {
        count_.fetch_add(n); // seq_cst: pairs with the waiter's publish-then-recheck
        if (waiters_.load() != 0)
            Wake();
    }

    // From now on Acquire returns Closed when no permit is left; waiters suspended now are
    // resumed with Closed. Idempotent.
    void Close() noexcept;
    bool IsClosed() const noexcept { return closed_.load(); }
    std::int64_t Available() const noexcept { return count_.load(std::memory_order_relaxed); }

    class Node final : public WaitNode
    {
    public:
        explicit Node(SemaphoreCore& owner) noexcept : owner_(&owner) {}
        void OnSuspended(SuspendedTask handle) noexcept override;
        bool OnTimeout(SuspendedTask handle) noexcept override;

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
            // Settle the timer on every path: when a Release handed the permit over (status set)
            // the deadline is still armed, and the frame holding it may be freed next.
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

    // The non-suspending part of an acquire; sets node.status when it decides.
    bool Ready(WaitNode& node) noexcept
    {
        node.status = static_cast<std::uint32_t>(TryAcquireOrClosed());
        return node.status != 0;
    }

    void Wake() noexcept;

    std::atomic<std::int64_t> count_;
    std::atomic<std::uint32_t> waiters_{0};
    std::atomic<bool> closed_{false};
    SpinLock lock_;
    WaitList list_;
};
} // namespace TC::Synchronization::detail
