#pragma once
// Mutex: a task-aware mutual-exclusion lock with FIFO hand-off under contention.

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

// Meets the standard Lockable requirements (lock/try_lock/unlock; std::lock_guard and
// std::unique_lock work), with PascalCase twins. A task, a converted thread or a coroutine
// (co_await m.LockAsync()) that finds it locked is suspended -- not spinning, not blocking its
// worker -- and queued. Unlock hands the mutex directly to the oldest queued waiter, which is
// resumed already owning it, so under contention ownership passes in strict arrival order and a
// newcomer cannot barge in ahead of the queue (the word never reads free while anyone is queued).
// The owner may unlock from another thread than the one it locked on (tasks migrate between
// workers). A short poll before queueing was measured and dropped: once a queue forms, only a
// hand-off frees the mutex, so a poll cannot succeed (guides/performance.md).
//
// State: one word (0 free, 1 locked, 2 locked with waiters); lock and unlock are a load and one
// CAS each while uncontended, the load first so that a contended attempt does not take the
// cache line from the owner with a failing CAS. The waiter queue is a spinlock-guarded FIFO of
// nodes living in the waiters' own frames (no allocation); resumes happen after that spinlock is
// released.
//
// Destruction: when it is unlocked, nobody waits on it and no unlock is running; an unlock does
// not touch the mutex after it resumed the next owner.
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

    // Takes the mutex, suspending (task or converted thread) until it is handed over. Not
    // recursive: locking a mutex one already owns deadlocks.
    void lock()
    {
        if (TryAcquire())
            return;
        // Queued by the node's OnSuspended; resumed owning the mutex. Inline, with the node in
        // the caller's frame, so that a resumed task continues straight in the caller instead of
        // returning into it through a frame of this library (a mispredicted return after each
        // switch: guides/performance.md).
        Node node(*this);
        SuspendTask(&node);
    }

    // Takes the mutex if it is free. Never suspends.
    bool try_lock() noexcept { return TryAcquire(); }

    // Releases the mutex, or hands it to the oldest waiter and resumes it. Any thread; never
    // suspends.
    void unlock() noexcept
    {
        std::uint32_t expected = kLocked;
        // relaxed load: a pre-check only (kContended goes straight to the slow path instead of
        // through a failing compare-exchange); release CAS: our writes are visible to the next
        // owner.
        if (state_.load(std::memory_order_relaxed) != kLocked ||
            !state_.compare_exchange_strong(expected, kFree, std::memory_order_release,
                                            std::memory_order_relaxed))
            UnlockSlow();
    }

    void Lock() { lock(); }
    bool TryLock() noexcept { return try_lock(); }
    void Unlock() noexcept { unlock(); }

    // As Lock, but gives up after `timeout` and returns false (unlimited without EnableTimers).
    /// - True: the caller owns the mutex. A hand-off that reaches the waiter as it times out
    ///   wins (the wait returns true): ownership is never lost to a timeout.
    bool TryLockFor(Duration timeout);

    // A snapshot: true while somebody owns it.
    bool IsLocked() const noexcept { return state_.load(std::memory_order_relaxed) != kFree; }

    class LockForAwaiter;

    // co_await m.LockAsync(): resumes owning the mutex, on the executor that was current when it
    // suspended. Unlock with Unlock() as usual.
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

    // co_await m.LockAsync(timeout): yields TryLockFor's answer; owning the mutex when true.
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

    // Reads before it writes (test and test-and-set): a CAS that fails still takes the cache line
    // away from the owner. relaxed load: a pre-check only, the CAS decides; acquire: we own it now
    // and see the previous owner's writes.
    bool TryAcquire() noexcept
    {
        std::uint32_t expected = kFree;
        return state_.load(std::memory_order_relaxed) == kFree &&
               state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void UnlockSlow() noexcept;
    // Takes the mutex for `node` (whose task is set) or queues it. Used by the lock slow path
    // and by ConditionVariable to move a notified waiter straight into the mutex's queue.
    void LockOrEnqueue(detail::WaitNode* node) noexcept;

    std::atomic<std::uint32_t> state_{kFree};
    detail::SpinLock lock_;
    detail::WaitList list_;
};
} // namespace TC::Synchronization
