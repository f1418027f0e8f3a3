#pragma once
// Diagnostics: race-point hooks for test kits, a dump of every task (every build), and hang
// reports that list the waiters nobody resumed.
//   TC::DumpTasks(std::cerr); // what every task waits on, e.g. from a debugger or a watchdog

#include <TC/Duration.h>
#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace TC
{
// The protocol's race points: where another thread's Put/Set/CountDown can land between a
// waiter's decision and its publication, or between a claim and the resume.
enum class RacePoint : std::uint8_t
{
    BeforeOnSuspended, // the waiter is off the processor; OnSuspended has not run yet
    AfterOnSuspended,  // OnSuspended returned (the waiter may already be resumed)
    BeforeResume,      // ResumeTask received the handle and is about to make it runnable
};

using RacePointHook = void (*)(RacePoint point, SuspendedTask task) noexcept;

// For test kits: a hook called at each race point on the reaching thread, outside the callback
// guard (it may pump, sleep, spin or yield). nullptr removes it; one relaxed load when unset.
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

// Checked builds: what a suspended waiter waits on (demangled type) and who it is ("task 'name'",
// "thread", "coroutine"); "?" in other builds.
TC_API std::string WaitedOnType(SuspendedTask waiter);
TC_API std::string DescribeWaiter(SuspendedTask waiter);

// Checked builds: a watchdog prints to stderr, once per waiter, every wait unresumed after
// `threshold` (what, who, how long); false and nothing in other builds. Again: a new threshold.
TC_API bool EnableHangReports(Duration threshold);

/// Writes every live task of every scheduler to `out`, in every build: id, name, state (running
/// on worker N or the host, ready, suspended, until a deadline, finished not joined) and, when
/// suspended, for how long and on what (the primitive's name and address); then converted threads
/// waiting past their spin; then suspended coroutines, by frame address.
/// - Any thread; takes each registry lock briefly, never waits for a task, costs nothing uncalled.
///   A resume of a coroutine it lists waits until it ends.
/// - Exact for tasks that keep their state meanwhile (a hang, a debugger stop); wait times come
///   from a worker's coarse clock (a wait begun now may read 0 s).
/// - A task is listed under the scheduler whose block it runs in; MoveCurrentTaskTo keeps that.
TC_API void DumpTasks(std::ostream& out);
} // namespace TC
