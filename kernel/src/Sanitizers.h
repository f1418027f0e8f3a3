#pragma once
// Which sanitizer this translation unit is built with, as two constexpr flags.

#if defined(__SANITIZE_ADDRESS__)
#define TC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TC_ASAN 1
#endif
#endif
#ifndef TC_ASAN
#define TC_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define TC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TC_TSAN 1
#endif
#endif
#ifndef TC_TSAN
#define TC_TSAN 0
#endif

#if TC_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if TC_TSAN
#include <sanitizer/tsan_interface.h>
#endif
