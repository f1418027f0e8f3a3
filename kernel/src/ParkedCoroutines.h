#pragma once
// The coroutines suspended now, for DumpTasks in builds without checked mode's registry of every
// waiter: a coroutine's entry is listed from its suspension until its resumer (or the timer)
// reschedules it, or until its frame is destroyed while parked.

#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>

#include <functional>

namespace TC::detail
{
// Before OnSuspended: from then on a resume may come at any time.
void ListParkedCoroutine(SuspendedTaskEntry& entry) noexcept;
// UnlistParkedCoroutine (<TC/SuspendAsync.h>): from Reschedule, before the coroutine can run (the
// entry's last access), and from the awaiter of a frame destroyed while parked; nothing when the
// entry is not listed.
// Calls `visit` for each listed coroutine, one dump at a time; a resumer of a listed coroutine
// waits until the dump ends, so `visit` must not resume, suspend or list.
void ForEachParkedCoroutine(const std::function<void(const SuspendedTaskEntry&)>& visit);
} // namespace TC::detail
