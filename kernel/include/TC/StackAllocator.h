#pragma once
// IStackAllocator: where task stacks come from, for hosts that manage their own memory; the guard
// region below each stack and the stack overflow report.
//   struct Arena : TC::IStackAllocator { /* Allocate, Deallocate */ };
//   options.stackAllocator = &arena;

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC
{
// Whether a task stack gets an inaccessible guard region below it (size: stackGuardBytes): an
// overflow into it faults at once. One extra mapping per stack: past ~30 000 live tasks use None
// (checked mode checks a canary instead) or raise vm.max_map_count.
enum class StackGuard : unsigned char
{
    Page, // a guard region of SchedulerOptions::stackGuardBytes
    None,
};

// Stack size classes; any size may be given. Rounded up to pages; the guard comes on top.
namespace StackSize
{
inline constexpr std::size_t Small = 16 * 1024;
inline constexpr std::size_t Medium = 64 * 1024;
inline constexpr std::size_t Large = 256 * 1024;
} // namespace StackSize

// The default guard region (SchedulerOptions::stackGuardBytes): address space only, no memory.
inline constexpr std::size_t kDefaultStackGuardBytes = 64 * 1024;

// Hands out and takes back task stacks; pooled stacks return on destruction, a full pool and
// TrimStackPool, so in a steady state no member runs.
/// - Every member may be called from any thread; failure is an exception (std::bad_alloc...): a
///   task that cannot get a stack ends unrun and Join rethrows it (a detached one terminates); a
///   Start that needed one throws it.
/// - The scheduler calls only AllocateStack/DeallocateStack; their defaults build the guard from
///   Allocate/Deallocate. Override both *Stack members to make the guard yourself.
/// - AllocateStack(usableBytes, guardBytes): lowest address of a page-aligned region of
///   guardBytes + usableBytes whose lowest guardBytes (whole pages, 0 for None) are
///   inaccessible. DeallocateStack gets the same three values back.
/// - Allocate(size, guard): lowest address of `size` page-aligned bytes; with Page its lowest page
///   inaccessible. The defaults mprotect the rest of the guard (so it must allow mprotect) and
///   make it accessible again before Deallocate.
class TC_API IStackAllocator
{
public:
    virtual void* Allocate(std::size_t size, StackGuard guard) = 0;
    virtual void Deallocate(void* base, std::size_t size, StackGuard guard) noexcept = 0;
    virtual void* AllocateStack(std::size_t usableBytes, std::size_t guardBytes);
    virtual void DeallocateStack(void* base, std::size_t usableBytes,
                                 std::size_t guardBytes) noexcept;

protected:
    IStackAllocator() = default;
    IStackAllocator(const IStackAllocator&) = default;
    IStackAllocator& operator=(const IStackAllocator&) = default;
    ~IStackAllocator() = default;
};

// The default: mmap'd stacks; the guard region is reserved inaccessible (mprotect), no memory.
TC_API IStackAllocator& DefaultStackAllocator() noexcept;

// The stack overflow report: a fault in a guard region prints "TC: stack overflow in task
// '<name>' (stack N KiB, guard M KiB)" to stderr, then the process dies with SIGSEGV, every build.
/// - The first Scheduler installs a SIGSEGV handler (SA_ONSTACK); task-running threads get an
///   alternate signal stack. Other faults go to the handler installed before, else the fault
///   repeats under the old disposition.
/// - A handler installed later replaces the report for good; a disposition reset to default (a
///   forked child's) is replaced by the next Scheduler; SetStackOverflowReport(true) reinstalls.
/// - Under ASan, its handler is the one replaced (no report with handle_segv=2 or
///   allow_user_segv_handler=0).
/// - Frames that skip the guard (larger than it, no -fstack-clash-protection) are not caught.
// Turns the report on (default) or off process-wide, any thread. Off before the first Scheduler:
// nothing installed; later: the handler removed if still installed (alternate stacks stay).
TC_API void SetStackOverflowReport(bool enabled) noexcept;
} // namespace TC
