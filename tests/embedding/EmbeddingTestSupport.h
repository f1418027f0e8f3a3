#pragma once
// Helpers shared by the embedding suites: a fire-and-forget coroutine, the stress scale and a
// monotonic clock in nanoseconds.

#include "support/Detached.h"
#include "support/SteadyClock.h"
#include "support/StressScale.h"

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <thread>

namespace TC::Testing
{
// A coroutine that starts at once and frees itself when it ends (tests/support/Detached.h).
using TestSupport::Detached;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TC_EMBEDDING_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TC_EMBEDDING_SANITIZED 1
#endif
#endif
#ifndef TC_EMBEDDING_SANITIZED
#define TC_EMBEDDING_SANITIZED 0
#endif

// Scales an operation count for the build: full in an optimised build, a fifth in a debug build,
// a tenth under a sanitizer; TC_STRESS_SCALE multiplies on top (tests/support/StressScale.h).
inline std::uint64_t Scaled(std::uint64_t count)
{
    double scale = 1.0;
#if TC_EMBEDDING_SANITIZED
    scale = 0.1;
#elif !defined(NDEBUG)
    scale = 0.2;
#endif
    return TCStress::Scale<std::uint64_t>(count, scale, 100, std::uint64_t{1} << 40);
}

// The calling thread's id, read afresh: std::this_thread::get_id() is pthread_self(), which glibc
// declares const, so an optimiser may reuse one answer after a task moved to another thread.
[[gnu::noinline]] inline std::thread::id ThisThreadId()
{
    asm volatile("" ::: "memory");
    return std::this_thread::get_id();
}

using TCSupport::NowNs;
} // namespace TC::Testing
