#pragma once
// Diagnostics: race-point hooks for test kits, seeded scheduling lives in SchedulerOptions, and
// hang reports that list the waiters nobody resumed (checked builds).

#include <TC/Duration.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <cstdint>
#include <string>
#include <vector>

namespace TC
{
// The protocol's race points: where another thread's Put/Set/CountDown can land between a
// waiter's decision to wait and its publication, or between a claim and the resume.
enum class RacePoint : std::uint8_t
{
    BeforeOnSuspended, // the waiter is off the processor; OnSuspended has not run yet
    AfterOnSuspended,  // OnSuspended returned (the waiter may already be resumed)
    BeforeResume,      // ResumeTask received the handle and is about to make it runnable
};

using RacePointHook = void (*)(RacePoint point, SuspendedTask task) noexcept;

// Installs a hook the kernel calls at each race point, on the thread that reached it and
// outside the callback guard (so a hook may pump a host scheduler). For test kits
// (<TC/Testing.h>): it may sleep, spin or yield the thread to widen a window. nullptr removes it.
// Costs one relaxed load per point when unset.
TC_API void SetRacePointHook(RacePointHook hook) noexcept;

// One waiter that is suspended right now (checked builds track them; others report none).
struct SuspendedWaiterInfo
{
    std::string waitsOn;      // the callback's dynamic type, demangled: the primitive waited on
    std::string waiter;       // "task '<name>'", "thread" or "coroutine"
    Duration suspendedFor;    // how long it has been suspended
};

// The waiters suspended now, oldest first. Empty unless the library is a checked build.
TC_API std::vector<SuspendedWaiterInfo> SnapshotSuspendedWaiters();

// Checked builds: what a suspended waiter waits on -- the demangled type of the primitive
// (the callback it suspended with, recorded at suspension) -- and who it is ("task 'name'",
// "thread" or "coroutine"). For checked-mode messages of primitives; "?" in other builds.
TC_API std::string WaitedOnType(SuspendedTask waiter);
TC_API std::string DescribeWaiter(SuspendedTask waiter);

// Checked builds: starts a watchdog that prints to stderr, once per waiter, every wait that has
// not been resumed after `threshold`: what it waits on, who waits and for how long. Returns
// false (and does nothing) in builds without checked mode. Calling it again changes the
// threshold.
TC_API bool EnableHangReports(Duration threshold);
} // namespace TC
