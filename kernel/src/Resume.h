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

// Calls OnSuspended with the callback-depth guard held (no waits allowed inside), between the
// two race points a test kit may widen.
inline void CallOnSuspended(SuspendedTaskEntry& entry, ThreadState& thread) noexcept
{
    ReachRacePoint(RacePoint::BeforeOnSuspended, entry);
    EnterCallback(thread);
    entry.callback_->OnSuspended(SuspendedTask(&entry));
    LeaveCallback(thread);
    ReachRacePoint(RacePoint::AfterOnSuspended, entry); // identifies only: may be resumed by now
}

inline void CallOnSuspended(SuspendedTaskEntry& entry) noexcept
{
    CallOnSuspended(entry, CurrentThread());
}

// Converted-thread wait (ThreadWaiter.cpp); returns false when timed out.
bool ThreadWait(ISuspendCallback* callback, Duration timeout);
} // namespace TC::detail
