#pragma once
// Reschedule: makes a waiter runnable again according to its kind. ResumeTask and the timer
// thread both end here; it touches the entry for the last time.

#include "Diagnostics.h"
#include "ThreadState.h"

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>

namespace TC::detail
{
void Reschedule(SuspendedTaskEntry* entry) noexcept;

// Checked builds: the entry begins a new suspension -- a new generation for its handles, the
// Suspended state, the registry behind hang reports. Before OnSuspended; inline and empty
// elsewhere, so a suspension's path calls nothing before its switch.
void MarkSuspendedChecked(SuspendedTaskEntry& entry) noexcept;
inline void MarkSuspended([[maybe_unused]] SuspendedTaskEntry& entry) noexcept
{
#if TC_CHECKED
    MarkSuspendedChecked(entry);
#endif
}

// Calls OnSuspended with the callback-depth guard held (no waits allowed inside), between the
// two race points a test kit may widen.
inline void CallOnSuspended(SuspendedTaskEntry& entry, ThreadState& thread) noexcept
{
    ReachRacePoint(RacePoint::BeforeOnSuspended, entry);
    const SuspendedTask handle(&entry);
    EnterCallback(thread);
    entry.callback_->OnSuspended(handle);
    LeaveCallback(thread);
    // Identifies only: the waiter may be resumed, and its entry gone, by now.
    if (RacePointHook hook = racePointHook.load(std::memory_order_relaxed)) [[unlikely]]
        hook(RacePoint::AfterOnSuspended, handle);
}

inline void CallOnSuspended(SuspendedTaskEntry& entry) noexcept
{
    CallOnSuspended(entry, CurrentThread());
}

// Converted-thread wait (ThreadWaiter.cpp); returns false when timed out (or stopped: `stop`,
// when not null, makes it stop-aware, timed even without timers).
bool ThreadWait(ISuspendCallback* callback, Duration timeout, const std::stop_token* stop);
} // namespace TC::detail
