#pragma once
// PrefetchForWrite: fetches a cache line this thread is about to write, in a state it can write
// at once. For a line another core has read since this thread last wrote it -- a queue slot a
// consumer thread copied out, to be filled again by a producer -- the write would otherwise wait
// for that core to drop its copy, and the next locked instruction (a lock, an exchange) waits for
// the write. Asked for a few writes ahead, the ownership request overlaps the work in between.

// 1 where the build does not target x86's PREFETCHW (PRFCHW) and it is asked of the processor.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__PRFCHW__)
#define TC_PREFETCHW_DETECTED_AT_RUN_TIME 1
#include <cpuid.h>
#else
#define TC_PREFETCHW_DETECTED_AT_RUN_TIME 0
#endif

namespace TC::detail
{
#if TC_PREFETCHW_DETECTED_AT_RUN_TIME
// x86's PREFETCHW is not in the baseline instruction set the build targets (GCC's
// __builtin_prefetch(p, 1) then emits a read prefetch, which leaves the line shared): asked of
// the processor once, at start-up. Until then, and where it lacks it, no prefetch is made.
inline bool ProcessorHasPrefetchW() noexcept
{
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_PRFCHW) != 0;
}
inline const bool processorHasPrefetchW = ProcessorHasPrefetchW();
#endif

// A hint, never a fault: `address` may point anywhere, though a line outside the caller's own
// memory may be taken from whoever writes it.
inline void PrefetchForWrite(const void* address) noexcept
{
#if TC_PREFETCHW_DETECTED_AT_RUN_TIME
    if (processorHasPrefetchW)
        __asm__ volatile("prefetchw %0" : : "m"(*static_cast<const char*>(address)));
#else
    __builtin_prefetch(address, 1); // PREFETCHW with PRFCHW; PRFM PSTL1KEEP on AArch64
#endif
}
} // namespace TC::detail
