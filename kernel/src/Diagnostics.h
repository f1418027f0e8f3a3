#pragma once
// Kernel-side entry points of <TC/Diagnostics.h>: the race-point hook and the registry of
// suspended waiters that hang reports read.

#include <TC/Diagnostics.h>
#include <TC/ISuspendCallback.h>

#include <atomic>
#include <exception>
#include <functional>
#include <iosfwd>
#include <string>

namespace TC::detail
{
extern std::atomic<RacePointHook> racePointHook;

inline void ReachRacePoint(RacePoint point, SuspendedTaskEntry& entry) noexcept
{
    if (RacePointHook hook = racePointHook.load(std::memory_order_relaxed)) [[unlikely]]
        hook(point, SuspendedTask(&entry));
}

// The demangled dynamic type of the callback a waiter suspended with -- the primitive it waits
// on -- for checked-mode messages. The waiter must still be suspended (its callback alive).
std::string PrimitiveTypeOf(const SuspendedTaskEntry& entry);
// What checked mode recorded at the entry's latest suspension (type nullptr: nothing recorded).
WaitTarget RecordedWaitTarget(const SuspendedTaskEntry& entry) noexcept;
// A wait target's name: the name the primitive gives, else its demangled type, else "?".
std::string NameOf(const WaitTarget& target);

// What `error` says of itself for a failure message: its what(), or that it is not a
// std::exception.
std::string DescribeException(const std::exception_ptr& error);

// Checked builds: add at publication, remove when the handle is resumed or taken back.
void RegisterSuspended(SuspendedTaskEntry& entry) noexcept;
void UnregisterSuspended(SuspendedTaskEntry& entry) noexcept;
// Checked builds: calls `visit` for each waiter suspended now, oldest first, under the
// registry's lock (it must not suspend or take that lock). Other builds: none.
void ForEachSuspended(const std::function<void(const SuspendedTaskEntry&)>& visit);

class SchedulerCore;
// The task lines of DumpTasks for the tasks of `core` alone (the hang report of ~Scheduler).
void DumpTasksOf(std::ostream& out, const SchedulerCore& core);
} // namespace TC::detail
