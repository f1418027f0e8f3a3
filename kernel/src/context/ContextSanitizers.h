#pragma once
// Fiber annotations shared by every context backend: AddressSanitizer must be told which stack
// is about to run, ThreadSanitizer which fiber; plain builds compile these to nothing.

#include "Sanitizers.h"
#include "context/Context.h"

#include <pthread.h>

namespace TC::detail
{
inline void DescribeThreadStack(ExecutionContext& context)
{
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0)
    {
        void* base = nullptr;
        std::size_t size = 0;
        pthread_attr_getstack(&attributes, &base, &size);
        pthread_attr_destroy(&attributes);
        context.stackBottom = base;
        context.stackSize = size;
    }
#if TC_TSAN
    context.tsanFiber = __tsan_get_current_fiber();
    context.ownsTsanFiber = false;
#endif
}

inline void DescribeFiberStack(ExecutionContext& context, void* base, std::size_t size)
{
    context.stackBottom = base;
    context.stackSize = size;
#if TC_TSAN
    if (context.tsanFiber == nullptr)
    {
        context.tsanFiber = __tsan_create_fiber(0);
        context.ownsTsanFiber = true;
    }
#endif
}

inline void ReleaseFiber(ExecutionContext& context) noexcept
{
#if TC_TSAN
    if (context.ownsTsanFiber && context.tsanFiber)
        __tsan_destroy_fiber(context.tsanFiber);
    context.tsanFiber = nullptr;
    context.ownsTsanFiber = false;
#else
    (void)context;
#endif
}

struct SwitchAnnotation
{
    void* fakeStack = nullptr;

    void Before(const ExecutionContext& to, bool fromFinished) noexcept
    {
#if TC_ASAN
        __sanitizer_start_switch_fiber(fromFinished ? nullptr : &fakeStack, to.stackBottom,
                                       to.stackSize);
#else
        (void)fromFinished;
#endif
#if TC_TSAN
        __tsan_switch_to_fiber(to.tsanFiber, 0);
#else
        (void)to;
#endif
    }

    void After() noexcept
    {
#if TC_ASAN
        __sanitizer_finish_switch_fiber(fakeStack, nullptr, nullptr);
#endif
    }
};
} // namespace TC::detail
