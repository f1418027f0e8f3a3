#pragma once
// PrefetchForWrite: fetches a cache line this thread is about to write, in a writable state.

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
// Whether the processor has PREFETCHW (baseline lacks it); asked at start-up, false before.
inline bool ProcessorHasPrefetchW() noexcept
{
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_PRFCHW) != 0;
}
inline const bool processorHasPrefetchW = ProcessorHasPrefetchW();
#endif

// A hint, never a fault: `address` may point anywhere.
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
