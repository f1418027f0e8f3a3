#pragma once
// Reschedule: makes a waiter runnable again according to its kind. ResumeTask and the timer
// thread both end here; it touches the entry for the last time.

#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendedTask.h>

namespace TC::detail
{
void Reschedule(SuspendedTaskEntry* entry) noexcept;

// Calls OnSuspended with the callback-depth guard held (no waits allowed inside).
void CallOnSuspended(SuspendedTaskEntry& entry) noexcept;

// Converted-thread wait (ThreadWaiter.cpp); returns false when timed out.
bool ThreadWait(ISuspendCallback* callback, Duration timeout);
} // namespace TC::detail
