#pragma once
// IStackAllocator: where task stacks come from (for hosts managing their memory); the guard
// below each stack and the stack overflow report.
//   struct Arena : TC::IStackAllocator { /* Allocate, Deallocate */ };
//   options.stackAllocator = &arena;

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC
{
// Whether a stack gets an inaccessible guard below it, where an overflow faults at once. One
// mapping each: past ~30 000 live tasks use None (checked mode checks a canary) or raise
// vm.max_map_count.
enum class StackGuard : unsigned char
{
    Page, // a guard of SchedulerOptions::stackGuardBytes
    None,
};

// Stack size classes; any size may be given (rounded up to pages).
namespace StackSize
{
inline constexpr std::size_t Small = 16 * 1024;
inline constexpr std::size_t Medium = 64 * 1024;
inline constexpr std::size_t Large = 256 * 1024;
} // namespace StackSize

// Default SchedulerOptions::stackGuardBytes: address space only.
inline constexpr std::size_t kDefaultStackGuardBytes = 64 * 1024;

// Task stacks' source.
/// - Any thread. Failure is an exception: the task ends unrun and Join rethrows it (a detached
///   one terminates); a Start that needed the stack throws it.
/// - The scheduler calls only AllocateStack/DeallocateStack, whose defaults build the guard from
///   Allocate/Deallocate; override both to make the guard yourself.
/// - AllocateStack(usableBytes, guardBytes): lowest address of a page-aligned region of
///   guardBytes + usableBytes, its lowest guardBytes (whole pages, 0 for None) inaccessible.
///   DeallocateStack gets the same values back.
/// - Allocate(size, guard): lowest address of `size` page-aligned bytes, with Page its lowest
///   page inaccessible; it must allow mprotect (the defaults protect the rest of the guard, and
///   unprotect it before Deallocate).
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

// The default: mmap'd stacks, the guard reserved inaccessible.
TC_API IStackAllocator& DefaultStackAllocator() noexcept;

// Stack overflow report: a fault in a guard prints "TC: stack overflow in task '<name>' (stack
// N KiB, guard M KiB)" to stderr; the process dies with SIGSEGV, every build.
/// - The first Scheduler installs a SIGSEGV handler (SA_ONSTACK); task threads get an alternate
///   signal stack. Other faults go to the previous handler, else repeat under the old disposition.
/// - A later handler replaces the report for good; a disposition reset to default (a forked
///   child's) is replaced by the next Scheduler; SetStackOverflowReport(true) reinstalls.
/// - Under ASan its handler is replaced (no report with handle_segv=2 or
///   allow_user_segv_handler=0).
/// - Frames that skip the guard (larger than it, no -fstack-clash-protection) are not caught.
// On (default) or off process-wide, any thread. Off before the first Scheduler: nothing
// installed; later: the handler removed if still installed (alternate stacks stay).
TC_API void SetStackOverflowReport(bool enabled) noexcept;
} // namespace TC
