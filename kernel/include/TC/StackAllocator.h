#pragma once
// IStackAllocator: where task stacks come from, for hosts that manage their own memory.

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC
{
// Whether a task stack gets an inaccessible guard page below it. With a guard page a stack
// overflow faults at once instead of corrupting memory, at the price of one extra memory mapping
// per stack: Linux allows vm.max_map_count mappings (65530 by default), so a program that keeps
// more than about 30 000 tasks alive at once needs StackGuard::None (checked mode still checks
// a canary word at the bottom of such stacks on every switch).
enum class StackGuard : unsigned char
{
    Page,
    None,
};

// Stack size classes; any size may be given, these are the usual ones. Sizes are rounded up to
// whole pages.
namespace StackSize
{
inline constexpr std::size_t Small = 16 * 1024;
inline constexpr std::size_t Medium = 64 * 1024;
inline constexpr std::size_t Large = 256 * 1024;
} // namespace StackSize

// Hands out and takes back task stacks. The scheduler keeps released stacks in a pool and calls
// Deallocate when it is destroyed, when the pool is full (SchedulerOptions::stackPoolBytes) and
// on Scheduler::TrimStackPool, so in steady state neither member runs. Both may be called from
// any thread of the scheduler. Allocate returns the lowest address of `size` bytes
// (page-aligned); with StackGuard::Page the allocator must make the lowest page inaccessible.
// Allocate throws std::bad_alloc (or another exception) on failure. A stack is taken when a task
// first runs (or at Start, for a callable too large for the task block): a task that cannot get
// one ends without running and its Join rethrows the exception (a detached one terminates the
// process with a message); a Start that needed a stack throws it. Nothing else changes.
class TC_API IStackAllocator
{
public:
    virtual void* Allocate(std::size_t size, StackGuard guard) = 0;
    virtual void Deallocate(void* base, std::size_t size, StackGuard guard) noexcept = 0;

protected:
    IStackAllocator() = default;
    IStackAllocator(const IStackAllocator&) = default;
    IStackAllocator& operator=(const IStackAllocator&) = default;
    ~IStackAllocator() = default;
};

// The default: mmap'd stacks, guard page made with mprotect.
TC_API IStackAllocator& DefaultStackAllocator() noexcept;
} // namespace TC
