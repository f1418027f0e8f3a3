#pragma once
// SeqCstFence: std::atomic_thread_fence(seq_cst), in a form ThreadSanitizer can follow.

#include <TC/detail/Export.h>

#include <atomic>

#if defined(__SANITIZE_THREAD__)
#define TC_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TC_DETAIL_TSAN 1
#endif
#endif
#ifndef TC_DETAIL_TSAN
#define TC_DETAIL_TSAN 0
#endif

namespace TC::detail
{
#if TC_DETAIL_TSAN
// The word TSan-build fences update (exported).
TC_API inline std::atomic<unsigned> tsanFenceWord{0};
#endif

/// A seq_cst fence; under ThreadSanitizer a seq_cst RMW of one process-wide word.
inline void SeqCstFence() noexcept
{
#if TC_DETAIL_TSAN
    tsanFenceWord.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
} // namespace TC::detail
