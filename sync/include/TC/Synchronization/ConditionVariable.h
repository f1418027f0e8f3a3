#pragma once
// ConditionVariable: waits for a condition guarded by a Mutex, from tasks, threads and coroutines.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/Mutex.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/TimeBudget.h>
#include <TC/Synchronization/detail/WaitNode.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <mutex>

namespace TC::Synchronization
{
// What a timed wait returned for.
enum class CvStatus : std::uint8_t
{
    Notified,
    TimedOut,
};

// The condition variable of Mutex. Wait(lock) releases the mutex and suspends the caller as one
// step (the waiter is queued before the mutex is released, so a notification made under the
// mutex after that point cannot be missed), and returns with the mutex held again.
//
// Wake-up rules:
// - No spurious wake-ups from the implementation: Wait(lock) returns only after a NotifyOne or
//   NotifyAll chose this waiter, and WaitFor also after its timeout.
// - But a returned Wait does not mean the condition holds: between the notification and the
//   moment this waiter owns the mutex again, other owners may have run and changed the state
//   (a "stolen" wake-up). Always re-check, or use the predicate forms, which loop.
// - NotifyOne resumes the oldest waiter; NotifyAll every waiter queued at that moment; a waiter
//   that queues after a Notify is not woken by it. Notify may be called with or without the mutex.
// - A notified waiter is moved straight into the mutex's FIFO queue (wait morphing) instead of
//   being resumed to fight over the mutex, so NotifyAll wakes waiters one owner at a time.
//
// Destruction: when no waiter is queued and no Notify is running; waiters already notified
// (still waiting for the mutex, even past their timeout) do not count.
class TC_API ConditionVariable
{
public:
    ConditionVariable() noexcept = default;
    ConditionVariable(const ConditionVariable&) = delete;
    ConditionVariable& operator=(const ConditionVariable&) = delete;
    ~ConditionVariable()
    {
        TC_CHECK(list_.IsEmpty(), "destroy a primitive only when nobody waits on it",
                 "a ConditionVariable was destroyed with waiters queued on it");
    }

    // Precondition: `lock` owns its mutex. Releases it, suspends (task or converted thread)
    // until notified, returns owning it again.
    void Wait(std::unique_lock<Mutex>& lock);

    // Waits until pred() is true (checked under the mutex, before the first wait too).
    template <class Predicate>
    void Wait(std::unique_lock<Mutex>& lock, Predicate pred)
    {
        while (!pred())
            Wait(lock);
    }

    // As Wait, but also returns after `timeout` (unlimited without EnableTimers); always
    // returns owning the mutex.
    CvStatus WaitFor(std::unique_lock<Mutex>& lock, Duration timeout);

    // Waits until pred() is true or `timeout` passed; returns pred() (false: timed out).
    template <class Predicate>
    bool WaitFor(std::unique_lock<Mutex>& lock, Duration timeout, Predicate pred)
    {
        if (timeout.IsInfinite())
        {
            Wait(lock, pred);
            return true;
        }
        detail::TimeBudget budget(timeout);
        while (!pred())
        {
            const auto left = budget.Left();
            if (left <= left.zero() || WaitFor(lock, left) == CvStatus::TimedOut)
                return pred();
        }
        return true;
    }

    // Resumes the oldest waiter (it continues once it owns the mutex). Any thread.
    void NotifyOne() noexcept;
    // Resumes every waiter queued now. Any thread.
    void NotifyAll() noexcept;

    // co_await cv.WaitAsync(mutex): the coroutine holds `mutex`; it is released while the
    // coroutine waits and owned again when it continues (on the executor current at suspension).
    class [[nodiscard("co_await it")]] WaitAwaiter;
    WaitAwaiter WaitAsync(Mutex& mutex) noexcept;

private:
    class Node final : public detail::WaitNode
    {
    public:
        Node(ConditionVariable& owner, Mutex& mutex) noexcept : owner_(&owner), mutex_(&mutex) {}
        void OnSuspended(SuspendedTask handle) noexcept override;
        bool OnTimeout(SuspendedTask handle) noexcept override;
        WaitTarget WaitedOn() const noexcept override
        {
            return {owner_, &typeid(ConditionVariable), nullptr};
        }
        Mutex* GetMutex() const noexcept { return mutex_; }
        // Whether a Notify (kNotified) or the timeout (kTimingOut) ends this wait, decided by one
        // CAS before either touches the other's side: a notified node's OnTimeout then never
        // touches this condition variable, which its owner may destroy once nobody waits on it.
        // Not WaitNode::linked: once a Notify hands the node to the mutex's queue, `linked`
        // speaks of that queue.
        static constexpr std::uint8_t kWaiting = 0;
        static constexpr std::uint8_t kNotified = 1;
        static constexpr std::uint8_t kTimingOut = 2;
        // True for the first of the two to ask (`by`: kNotified or kTimingOut).
        bool Claim(std::uint8_t by) noexcept
        {
            std::uint8_t expected = kWaiting;
            return claim_.compare_exchange_strong(expected, by, std::memory_order_acq_rel);
        }

    private:
        std::atomic<std::uint8_t> claim_{kWaiting};
        ConditionVariable* owner_;
        Mutex* mutex_;
    };

    detail::SpinLock lock_;
    detail::WaitList list_;
};

class [[nodiscard("co_await it")]] ConditionVariable::WaitAwaiter
{
public:
    WaitAwaiter(ConditionVariable & owner, Mutex & mutex) noexcept
        : node_(owner, mutex), inner_(&node_)
    {
    }
    bool await_ready() const noexcept
    {
        return false;
    }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        return inner_.await_suspend(handle);
    }
    void await_resume() const noexcept {}

private:
    Node node_;
    SuspendAwaiter inner_;
};

inline ConditionVariable::WaitAwaiter ConditionVariable::WaitAsync(Mutex& mutex) noexcept
{
    return WaitAwaiter(*this, mutex);
}
} // namespace TC::Synchronization
