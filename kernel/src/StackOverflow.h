#pragma once
// The stack overflow report (StackOverflow.cpp; TC::SetStackOverflowReport).

namespace TC::detail
{
// On each thread before it first runs a task (a worker, a host's first pump): installs the
// process's SIGSEGV handler if it is not yet, and gives the thread an alternate signal stack if
// it has none. Once per thread; nothing when the report is off.
void PrepareThreadForTasks() noexcept;
// On each Scheduler's construction: installs the handler unless it is off, installed already,
// or another handler replaced it since it was first installed (only the default is replaced
// again: a forked child that reset it).
void InstallStackOverflowReport() noexcept;
} // namespace TC::detail
