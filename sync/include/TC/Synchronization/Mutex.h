#pragma once
// Mutex: a task-aware mutual-exclusion lock with FIFO hand-off under contention.
// Uncontended lock and unlock: a load and one CAS each; no allocation.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaitNode.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstdint>

namespace TC::Synchronization
{
class ConditionVariable;

/// ```cpp
/// Mutex m;
/// { std::lock_guard guard(m); Update(); }   // coroutine: co_await m.LockAsync(); ...; m.Unlock();
/// ```
/// - Lockable (lock/try_lock/unlock) with PascalCase twins. A task, converted thread or
///   coroutine that finds it locked is suspended (its worker not blocked) and queued.
/// - Unlock hands the mutex to the oldest queued waiter, resumed already owning it: strict
///   arrival order under contention, no barging.
/// - The owner may unlock from another thread than it locked on (tasks migrate).
/// - Destruction: when unlocked, nobody waits and no unlock runs; an unlock does not touch the
///   mutex after resuming the next owner.
class TC_API Mutex
{
public:
    Mutex() noexcept = default;
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;
    ~Mutex()
    {
        TC_CHECK(list_.IsEmpty(), "destroy a primitive only when nobody waits on it",
                 "a Mutex was destroyed with waiters queued on it");
    }

    // Takes it, suspending (task or converted thread) until handed over. Not recursive: deadlocks.
    void lock()
    {
        if (TryAcquire())
            return;
        // Queued by the node's OnSuspended; resumed owning the mutex. Inline: design notes.
        Node node(*this);
        SuspendTask(&node);
    }

    // Takes the mutex if it is free. Never suspends.
    bool try_lock() noexcept { return TryAcquire(); }

    // Releases it, or hands it to the oldest waiter. Any thread; never suspends.
    void unlock() noexcept
    {
        std::uint32_t expected = kLocked;
        // relaxed pre-check; release CAS publishes our writes to the next owner.
        if (state_.load(std::memory_order_relaxed) != kLocked ||
            !state_.compare_exchange_strong(expected, kFree, std::memory_order_release,
                                            std::memory_order_relaxed))
            UnlockSlow();
    }

    void Lock() { lock(); }
    bool TryLock() noexcept { return try_lock(); }
    void Unlock() noexcept { unlock(); }

    // As Lock; false after `timeout` (no limit without EnableTimers). True: caller owns it; a
    // hand-off racing the timeout wins, so ownership is never lost to a timeout.
    bool TryLockFor(Duration timeout);

    // Snapshot: somebody owns it.
    bool IsLocked() const noexcept { return state_.load(std::memory_order_relaxed) != kFree; }

    class LockForAwaiter;

    // co_await m.LockAsync(): resumes owning it, on the executor current when it suspended.
    class [[nodiscard("co_await it")]] LockAwaiter
    {
    public:
        explicit LockAwaiter(Mutex & owner) noexcept : owner_(owner), node_(owner), inner_(&node_)
        {
        }
        bool await_ready() noexcept
        {
            return owner_.TryAcquire();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        void await_resume() const noexcept {}

    private:
        class Mutex& owner_;
        class Node final : public detail::WaitNode
        {
        public:
            explicit Node(Mutex& owner) noexcept : owner_(&owner) {}
            void OnSuspended(SuspendedTask handle) noexcept override;
            bool OnTimeout(SuspendedTask handle) noexcept override;
            WaitTarget WaitedOn() const noexcept override { return {owner_, &typeid(Mutex), nullptr}; }

        private:
            Mutex* owner_;
        };
        friend class Mutex;
        friend class LockForAwaiter;
        Node node_;
        SuspendAwaiter inner_;
    };

    // co_await m.LockAsync(timeout): yields TryLockFor's answer.
    class [[nodiscard("co_await it")]] LockForAwaiter
    {
    public:
        LockForAwaiter(Mutex & owner, Duration timeout) noexcept
            : owner_(owner), node_(owner), inner_(&node_, timeout)
        {
        }
        bool await_ready() noexcept
        {
            return ready_ = owner_.TryAcquire();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        bool await_resume() noexcept
        {
            return ready_ || inner_.await_resume(); // true: handed the mutex
        }

    private:
        class Mutex& owner_;
        LockAwaiter::Node node_;
        SuspendForAwaiter inner_;
        bool ready_ = false;
    };

    LockAwaiter LockAsync() noexcept { return LockAwaiter(*this); }
    LockForAwaiter LockAsync(Duration timeout) noexcept { return LockForAwaiter(*this, timeout); }

private:
    friend class ConditionVariable;
    using Node = LockAwaiter::Node;

    static constexpr std::uint32_t kFree = 0;
    static constexpr std::uint32_t kLocked = 1;
    static constexpr std::uint32_t kContended = 2;

    // Test and test-and-set; acquire CAS: we see the previous owner's writes.
    bool TryAcquire() noexcept
    {
        std::uint32_t expected = kFree;
        return state_.load(std::memory_order_relaxed) == kFree &&
               state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void UnlockSlow() noexcept;
    // Takes it for `node` (task set) or queues it; also ConditionVariable's requeue.
    void LockOrEnqueue(detail::WaitNode* node) noexcept;

    std::atomic<std::uint32_t> state_{kFree};
    detail::SpinLock lock_;
    detail::WaitList list_;
};
} // namespace TC::Synchronization
