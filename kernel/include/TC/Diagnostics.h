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

// Installs a hook called at each race point on the reaching thread, outside the callback guard (it
// may pump, sleep, spin or yield); for test kits. nullptr removes it; one relaxed load when unset.
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

// Checked builds: the demangled type a suspended waiter waits on and who it is ("task 'name'",
// "thread", "coroutine"), for checked-mode messages; "?" in other builds.
TC_API std::string WaitedOnType(SuspendedTask waiter);
TC_API std::string DescribeWaiter(SuspendedTask waiter);

// Checked builds: a watchdog prints to stderr, once per waiter, every wait unresumed after
// `threshold` (what, who, how long); false and nothing in other builds. Again: a new threshold.
TC_API bool EnableHangReports(Duration threshold);

/// Writes every live task of every scheduler to `out`, in every build (Release included): per
/// scheduler a header line, then one line per task with its id, name and state -- running on
/// worker N (or on the host thread), ready, suspended, suspended until a deadline in N ms, or
/// finished but not joined -- and for a suspended task how long it has waited and what it waits
/// on (the primitive's name and address); then each converted thread that waits, with its OS
/// thread id and name; then the coroutines suspended through the suspend protocol or parked in
/// an AsyncQueue, by frame address. A resume of a coroutine it lists waits until it ends.
/// - A converted thread's wait is listed, and timed, once it outlasts its spin (a few
///   microseconds).
/// - The wait is timed from its worker's coarse clock, read every few dozen picks, when the
///   worker wakes and when a host's pump turn begins: it may count the run of the tasks picked
///   just before the wait began, and reads 0 s for a wait that began this instant.
/// - Costs nothing else while not called: it reads the task blocks each scheduler keeps anyway.
/// - A task is listed under the scheduler whose task block it runs in: the one the starting
///   thread works for, else the one it was started on; MoveCurrentTaskTo does not change it.
/// - Exact for tasks that do not change state while it reads (a hang, a program stopped in a
///   debugger); a task that is being resumed meanwhile may be shown in either state. Call it
///   while the tasks it lists are stuck, not as a routine log in a busy program.
/// - Any thread, also a task's; it takes each scheduler's registry lock briefly, never waits
///   for a task.
TC_API void DumpTasks(std::ostream& out);
} // namespace TC
