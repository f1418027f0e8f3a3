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
// The word every SeqCstFence of a ThreadSanitizer build updates: one per process (exported, so a
// program and a shared library share it).
TC_API inline std::atomic<unsigned> tsanFenceWord{0};
#endif

/// A sequentially consistent fence.
/// - Under ThreadSanitizer, which does not model fences (GCC warns about them with -Wtsan), it is a
///   seq_cst read-modify-write of one process-wide word instead: all of them are in that word's
///   modification order and each synchronizes with the one before, which orders a store before
///   the fence against a load after another thread's fence as the fences themselves would.
inline void SeqCstFence() noexcept
{
#if TC_DETAIL_TSAN
    tsanFenceWord.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
} // namespace TC::detail
