#pragma once
// The game loop's profiler hooks: task and coroutine zones counted and checked for pairing, the
// way a fiber-aware profiler (Tracy's TracyFiberEnter/TracyFiberLeave) would receive them.

#include <TC/Scheduler.h>
#include <TC/SuspendedTask.h>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <pthread.h>
#include <string>
#include <utility>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

// [guide:hooks]
// What a profiler's fiber API needs (Tracy: TracyFiberEnter(name) / TracyFiberLeave): each
// task's enter and leave, in pairs, on the thread that runs it, with a stable name. Here we just
// count and check the pairing.
struct Profiler
{
    std::atomic<long> enters{0};
    std::atomic<long> leaves{0};
    std::atomic<int> unpaired{0};
    std::atomic<int> threadsStarted{0};
    std::atomic<int> threadsStopped{0};
};
inline thread_local const char* currentZone = nullptr;

inline TC::SchedulerHooks MakeHooks(Profiler& profiler)
{
    TC::SchedulerHooks hooks;
    hooks.threadStart = [&profiler](unsigned workerIndex)
    {
        const std::string name = "sim-worker-" + std::to_string(workerIndex);
        pthread_setname_np(pthread_self(), name.c_str());
#if defined(__SSE__)
        _mm_setcsr(_mm_getcsr() | 0x8040); // flush denormals to zero (FTZ | DAZ)
#endif
        ++profiler.threadsStarted;
    };
    hooks.threadStop = [&profiler](unsigned) { ++profiler.threadsStopped; };
    hooks.taskEnter = [&profiler](TC::TaskHandle, const char* name)
    {
        if (currentZone != nullptr)
            ++profiler.unpaired;
        currentZone = name; // TracyFiberEnter(name)
        ++profiler.enters;
    };
    hooks.taskLeave = [&profiler](TC::TaskHandle, const char* name)
    {
        if (currentZone != name)
            ++profiler.unpaired;
        currentZone = nullptr; // TracyFiberLeave
        ++profiler.leaves;
    };
    return hooks;
}
// [/guide:hooks]

// Counts each resumption of a coroutine whose promise derives from it, and those that found no
// coroutine zone open as their body went on (see ThisThreadId below on thread-locals across a
// suspension: CurrentChain reads afresh).
inline std::atomic<int> coroutineResumptions{0};
inline std::atomic<int> resumedOutsideZone{0};
[[gnu::noinline]] static std::uint64_t CurrentChain();

struct ZoneCheckedPromise
{
    template <class Awaiter>
    struct Checked
    {
        Awaiter inner;
        bool await_ready() { return inner.await_ready(); }
        template <class Handle>
        decltype(auto) await_suspend(Handle handle) { return inner.await_suspend(handle); }
        void await_resume() // the sample's coroutines await nothing that returns a value
        {
            inner.await_resume(); // the library's awaiter enters the zone here
            ++coroutineResumptions;
            if (CurrentChain() == 0)
                ++resumedOutsideZone;
        }
    };
    template <class Awaiter>
    Checked<Awaiter> await_transform(Awaiter awaiter)
    {
        return {std::move(awaiter)};
    }
};

// [guide:coroutine-hooks]
// The same for coroutines: a scheduler that resumes one calls coroutineEnter/coroutineLeave
// around it on that thread, with its chain's id (unique in the process, like TaskHandle::Id())
// and name (Tracy: TracyFiberEnter(name)).
struct CoroutineZones
{
    std::atomic<long> enters{0};
    std::atomic<long> leaves{0};
    std::atomic<int> unpaired{0};
};
inline thread_local std::uint64_t currentChain = 0;

inline void AddCoroutineHooks(TC::SchedulerHooks& hooks, CoroutineZones& zones)
{
    hooks.coroutineEnter = [&zones](std::uint64_t chainId, const char*)
    {
        if (currentChain != 0 || chainId == 0)
            ++zones.unpaired;
        currentChain = chainId;
        ++zones.enters;
    };
    hooks.coroutineLeave = [&zones](std::uint64_t chainId, const char*)
    {
        if (currentChain != chainId)
            ++zones.unpaired;
        currentChain = 0;
        ++zones.leaves;
    };
}

// A coroutine that starts at once and frees itself at the end. Its promise's Identity() names
// its chain to the hooks (without one a resumption is a fresh "coroutine").
struct FireAndForget
{
    struct promise_type : ZoneCheckedPromise // the sample's check that each resumption is in a zone
    {
        FireAndForget get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        TC::CoroutineIdentity& Identity() noexcept { return identity; }
        TC::CoroutineIdentity identity{.id = 0, .name = "stream-asset"};
    };
};
// [/guide:coroutine-hooks]

[[gnu::noinline]] static std::uint64_t CurrentChain()
{
    asm volatile("" ::: "memory");
    return currentChain;
}
