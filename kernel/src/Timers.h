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
// The waiter, once it runs again, calls SettleTimer, which returns only when no other thread
// can touch the node any more; that is what lets the node live on the waiter's stack or frame.

#include <TC/Duration.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>

#include <cstdint>

namespace TC::detail
{
inline constexpr std::uint32_t kTimerArming = 1;
inline constexpr std::uint32_t kTimerArmed = 2;
inline constexpr std::uint32_t kTimerResumed = 4;
inline constexpr std::uint32_t kTimerFiring = 8;
inline constexpr std::uint32_t kTimerDone = 16;

std::int64_t SteadyNowNanoseconds() noexcept;

// Before OnSuspended: attaches `node` to `entry` with its deadline and marks it arming.
void PrepareTimer(SuspendedTaskEntry& entry, TimerNode& node, Duration timeout) noexcept;
// After OnSuspended: puts the deadline in the heap unless a resume already arrived. Touches
// neither node nor entry after its final state change.
void ArmTimer(TimerNode& node) noexcept;
// From ResumeTask, before the waiter is made runnable.
inline void NoteTimerResume(TimerNode& node) noexcept
{
    node.state.fetch_or(kTimerResumed, std::memory_order_acq_rel);
}
// On the waiter after it runs again: waits until the timer thread can no longer touch the node;
// returns true if a ResumeTask ended the wait, false if it timed out.
bool SettleTimer(SuspendedTaskEntry& entry, TimerNode& node) noexcept;
} // namespace TC::detail
