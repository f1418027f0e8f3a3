#pragma once
// ConditionVariable: waits for a condition guarded by a Mutex, from tasks, threads and coroutines.
//   auto lock = mutex.Lock();  cv.Wait(lock, [&] { return ready; });

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

// Mutex's condition variable: Wait(lock) queues the waiter, then releases the mutex (a Notify
// under the mutex cannot be missed) and returns owning it again.
/// - No spurious wake-ups: Wait returns only when a Notify chose it (WaitFor also on timeout).
/// - A returned Wait does not mean the condition holds (stolen wake-up): re-check, or use the
///   predicate forms.
/// - NotifyOne: the oldest waiter; NotifyAll: those queued then. With or without the mutex.
/// - A notified waiter moves straight into the mutex's FIFO (wait morphing).
/// - Destroy it with no waiter queued and no Notify running (notified waiters do not count).
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

    // Precondition: `lock` owns its mutex. Releases it, suspends until notified, re-owns it.
    void Wait(std::unique_lock<Mutex>& lock);

    // Waits until pred() is true (checked under the mutex, before the first wait too).
    template <class Predicate>
    void Wait(std::unique_lock<Mutex>& lock, Predicate pred)
    {
        while (!pred())
            Wait(lock);
    }

    // As Wait, also returning after `timeout` (unlimited without EnableTimers); owns the mutex.
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

    // co_await cv.WaitAsync(mutex): released while waiting, owned again on resuming (on the
    // executor current at suspension).
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
        // One CAS decides whether a Notify (kNotified) or the timeout (kTimingOut) ends the
        // wait: a notified node's OnTimeout never touches this object. (Not WaitNode::linked.)
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
