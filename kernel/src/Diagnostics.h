#pragma once
// Kernel-side entry points of <TC/Diagnostics.h>: the race-point hook and the registry of
// suspended waiters that hang reports read.

#include <TC/Diagnostics.h>

#include <atomic>
#include <exception>
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

// What `error` says of itself for a failure message: its what(), or that it is not a
// std::exception.
std::string DescribeException(const std::exception_ptr& error);

// Checked builds: add at publication, remove when the handle is resumed or taken back.
void RegisterSuspended(SuspendedTaskEntry& entry) noexcept;
void UnregisterSuspended(SuspendedTaskEntry& entry) noexcept;
} // namespace TC::detail
