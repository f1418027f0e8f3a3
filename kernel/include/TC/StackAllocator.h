#pragma once
// IStackAllocator: where task stacks come from, for hosts that manage their own memory; the guard
// region below each stack and the stack overflow report.

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC
{
// Whether a task stack gets an inaccessible guard region below it (SchedulerOptions::stackGuard;
// its size is SchedulerOptions::stackGuardBytes). With a guard an overflow that lands in the
// region faults at once instead of corrupting memory, at the price of one extra memory mapping
// per stack whatever the guard's size: Linux allows vm.max_map_count mappings (65530 by
// default), so a program that keeps more than about 30 000 tasks alive at once needs
// StackGuard::None (checked mode still checks a canary word at the bottom of such stacks on
// every switch) or a higher vm.max_map_count.
enum class StackGuard : unsigned char
{
    Page, // a guard region of SchedulerOptions::stackGuardBytes (the name predates its size)
    None,
};

// Stack size classes; any size may be given, these are the usual ones. Sizes are rounded up to
// whole pages, and count what a task may use: the guard region comes on top.
namespace StackSize
{
inline constexpr std::size_t Small = 16 * 1024;
inline constexpr std::size_t Medium = 64 * 1024;
inline constexpr std::size_t Large = 256 * 1024;
} // namespace StackSize

// The default guard region (SchedulerOptions::stackGuardBytes): address space only, no memory.
inline constexpr std::size_t kDefaultStackGuardBytes = 64 * 1024;

// Hands out and takes back task stacks. The scheduler keeps released stacks in a pool and gives
// them back when it is destroyed, when the pool is full (SchedulerOptions::stackPoolBytes) and on
// Scheduler::TrimStackPool, so in steady state no member runs. Every member may be called from
// any thread. Failure is an exception (std::bad_alloc or another): a stack is taken when a task
// first runs (or at Start, for a callable too large for the task block); a task that cannot get
// one ends without running and its Join rethrows the exception (a detached one terminates the
// process with a message); a Start that needed a stack throws it. Nothing else changes.
///
/// - The scheduler calls AllocateStack and DeallocateStack only. An allocator that overrides
///   just Allocate and Deallocate gets the defaults below, which build the guard region from
///   them; override both *Stack members to make the region yourself (as address space only:
///   DefaultStackAllocator reserves it PROT_NONE, costing no memory).
/// - AllocateStack(usableBytes, guardBytes) returns the lowest address of a page-aligned region
///   of guardBytes + usableBytes bytes whose lowest guardBytes (a whole number of pages, 0 for
///   StackGuard::None) are inaccessible. DeallocateStack gets the same three values back.
/// - Allocate(size, guard) returns the lowest address of `size` bytes (page-aligned); with
///   StackGuard::Page it must make the lowest page inaccessible. The default AllocateStack asks
///   it for guardBytes + usableBytes and makes the rest of the guard inaccessible with mprotect
///   (so its memory must allow mprotect, as any page-aligned private mapping does), and the
///   default DeallocateStack makes that part accessible again before it calls Deallocate.
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

// The stack overflow report. A task that faults in its guard region makes the process print
// "TC: stack overflow in task '<name>' (stack N KiB, guard M KiB)" to stderr before it dies with
// SIGSEGV, in every build.
///
/// - How: the first Scheduler created (or thread that runs tasks) installs a SIGSEGV handler
///   (SA_ONSTACK), and every thread that runs tasks (workers, and each host thread from its
///   first pump) gets an alternate signal stack unless it has one already. The handler compares
///   the fault address with the guard region of the task running on the faulting thread and
///   prints with write(2) if it lies there. Every SIGSEGV then goes to the handler installed
///   before the report (SA_SIGINFO or plain), called on the alternate stack. If there was none,
///   or it returns from an overflow, the disposition before the report is put back and the
///   fault repeats: the process dies with SIGSEGV, as it would have without the report.
/// - A handler the program installs later replaces the report for good (the report then stays
///   silent; its handler may chain to the report's). Only a disposition reset to the default (a
///   forked child's) is replaced again, by the next Scheduler created; SetStackOverflowReport(true)
///   installs it at once over whatever is there.
/// - Sanitizers: AddressSanitizer's own SIGSEGV handler is the one replaced (it lets programs
///   install theirs unless ASAN_OPTIONS has handle_segv=2 or allow_user_segv_handler=0, in
///   which case no report is printed); its report follows the message.
/// - Overflows that skip the guard region entirely (a frame larger than the region, in code built
///   without -fstack-clash-protection) are not caught; see guides/lifetimes-and-sizing.md.
// Turns the report on (the default) or off for the whole process. Off before the first Scheduler is
// created: nothing is installed. Off later: the handler is removed if it is still the one installed
// (the alternate signal stacks stay until their threads exit); a thread that first ran a task while
// it was off has no alternate stack of the report's. Any thread, any time.
TC_API void SetStackOverflowReport(bool enabled) noexcept;
} // namespace TC
