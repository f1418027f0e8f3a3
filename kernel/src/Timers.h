#pragma once
// The timer service: one thread that owns every SuspendTaskFor deadline, kept in an intrusive
// pairing heap of TimerNodes that live in the waiters themselves (no allocation per wait).
//
// A TimerNode's state word tells who may touch it:
//   kTimerArming  set by the suspending side before OnSuspended, cleared once the deadline is
//                 in the heap (or known to be unnecessary because a resume already came)
//   kTimerArmed   in the heap
//   kTimerResumed a ResumeTask reached the entry
//   kTimerFiring  the timer thread took it out of the heap and is calling OnTimeout
//   kTimerDone    the timer thread is finished with it
//   kTimerStopped a stop request reached the node (StopTimer): armed, it is fired at once on the
//                 requesting thread; still arming, ArmTimer fires it as an expired deadline
// The waiter, once it runs again, calls SettleTimer, which returns only when no other thread
// can touch the node any more; that is what lets the node live on the waiter's stack or frame.
//
// A parked coroutine (one with an executor) is different: the executor may drop its frame, and
// the node in it, instead of resuming it (a closed strand does). So it is submitted only once
// nothing can touch the node: by the resumer after taking the node out of the heap (or after
// the timer thread is done with it), or -- when the resumer finds the node still arming or being
// fired -- by whoever holds the node then, ArmTimer's caller or the timer thread, as its last act.
// One RMW on the state word decides which.

#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>

#include <cstdint>
#include <optional>
#include <stop_token>

namespace TC::detail
{
inline constexpr std::uint32_t kTimerArming = 1;
inline constexpr std::uint32_t kTimerArmed = 2;
inline constexpr std::uint32_t kTimerResumed = 4;
inline constexpr std::uint32_t kTimerFiring = 8;
inline constexpr std::uint32_t kTimerDone = 16;
inline constexpr std::uint32_t kTimerStopped = 32;

std::int64_t SteadyNowNanoseconds() noexcept;
// `now` plus `ns` (not negative), saturated at INT64_MAX: a huge finite timeout must read as a
// far deadline, never wrap to one long past.
constexpr std::int64_t DeadlineAfter(std::int64_t now, std::int64_t ns) noexcept
{
    return ns > INT64_MAX - now ? INT64_MAX : now + ns;
}

// The deadline of a zero or negative timeout: passed before the wait was armed.
inline constexpr std::int64_t kExpiredWhenArmed = INT64_MIN;

// Before OnSuspended: attaches `node` to `entry` with its deadline and marks it arming. Without
// EnableTimers (a stop-aware wait) the deadline is never.
void PrepareTimer(SuspendedTaskEntry& entry, TimerNode& node, Duration timeout) noexcept;
// After OnSuspended: puts the deadline in the heap unless a resume already arrived, and returns
// true in that case (a parked coroutine's caller then submits it). Counts a parked coroutine on
// its scheduler first (DeliverCountedCoroutine). A task's or a converted
// thread's deadline that had passed before the wait (kExpiredWhenArmed) is fired right here
// instead, on the calling thread, as the timer thread would fire it (returns false). Touches
// neither node nor entry after its final state change.
bool ArmTimer(TimerNode& node) noexcept;
// A coroutine parked on a Scheduler from that scheduler's own work (a worker or pump of it runs
// the await_suspend) is counted there while its deadline is pending (ArmTimer,
// TimerNode::countedBy): the scheduler's Stop waits for it as for a task. Its resumption, whoever
// delivers it (resumer, timer thread, ArmTimer's caller), is queued there as a resume (never
// refused) and then uncounted: the last access to the scheduler. False: the entry is not
// counted, and the caller submits it to its executor as usual.
bool DeliverCountedCoroutine(SuspendedTaskEntry& entry) noexcept;
// From ResumeTask for a parked coroutine: marks the node resumed and takes it out of the heap.
// True: nothing can touch the node any more and the caller submits the coroutine. False: the
// node is still arming or firing, and ArmTimer's caller or the timer thread submits it; the
// caller must not touch the entry again.
bool ReleaseTimerForResume(TimerNode& node) noexcept;
// A coroutine with an executor, which may drop its frame rather than resume it.
inline bool IsParkedCoroutine(const SuspendedTaskEntry& entry) noexcept
{
    return entry.kind_ == WaiterKind::Coroutine && entry.executor_ != nullptr;
}
// From ResumeTask, before the waiter is made runnable.
inline void NoteTimerResume(TimerNode& node) noexcept
{
    node.state.fetch_or(kTimerResumed, std::memory_order_acq_rel);
}
// On the waiter after it runs again: waits until the timer thread can no longer touch the node;
// returns true if a ResumeTask ended the wait, false if it timed out.
bool SettleTimer(SuspendedTaskEntry& entry, TimerNode& node) noexcept;

// A stop request for the wait of a task or converted thread: marks the node stopped and, if it
// is in the heap, takes it out and fires it on the calling thread as the timer thread would.
void StopTimer(TimerNode& node) noexcept;

// Between PrepareTimer and SettleTimer of a stop-aware wait: a std::stop_callback that calls
// StopTimer. Disarm before SettleTimer: it returns once a StopTimer in progress has returned, so
// nothing but the waiter touches the node afterwards.
class StopTrigger
{
public:
    StopTrigger(TimerNode& node, const std::stop_token* token) noexcept
    {
        if (token)
            callback_.emplace(*token, Fire{&node});
    }
    void Disarm() noexcept { callback_.reset(); }

private:
    struct Fire
    {
        TimerNode* node;
        void operator()() const noexcept { StopTimer(*node); }
    };
    std::optional<std::stop_callback<Fire>> callback_;
};
} // namespace TC::detail
