#pragma once
// The one small interface the rest of the kernel sees for switching stacks: an ExecutionContext,
// MakeContext to prepare a fresh one and SwitchContext to move between two. Backends:
// Switch_x86_64_sysv.S / Switch_aarch64.S with ContextAsm.cpp, or ContextUcontext.cpp.

#include "Sanitizers.h"

#include <cstddef>

#if TC_CONTEXT_ASM && !TC_ASAN && !TC_TSAN
#define TC_INLINE_SWITCH 1
extern "C" void* TC_SwitchContext(void** saveSp, void* loadSp, void* message);
#else
#define TC_INLINE_SWITCH 0
#endif

// With clang's preserve_none convention (clang 19 and later, x86-64) the plain switch is the lean
// one: its callers save only the registers they have live, and it saves rbp and rbx. Its frames
// differ from the full switch's, so a context saved by SwitchContext is resumed by SwitchContext
// and one saved by SwitchContextThen by SwitchContextThen (the kernel uses the latter alone).
#if TC_INLINE_SWITCH && defined(__x86_64__) && defined(__clang__) && __clang_major__ >= 19
#define TC_SWITCH_PRESERVE_NONE 1
extern "C" [[clang::preserve_none]] void* TC_SwitchContextLean(void** saveSp, void* loadSp,
                                                               void* message) noexcept;
#else
#define TC_SWITCH_PRESERVE_NONE 0
#endif

// The assembly switch can also run a step on the other side before it continues there
// (SwitchContextThen); elsewhere -- ucontext, the sanitizers' annotated switch -- the caller runs
// that step after SwitchContext returns.
#if TC_INLINE_SWITCH
#define TC_SWITCH_RUNS_THEN 1
extern "C" void* TC_SwitchContextThen(void** saveSp, void* loadSp, void* message,
                                      void (*then)(void*) noexcept) noexcept;
#else
#define TC_SWITCH_RUNS_THEN 0
#endif

namespace TC::detail
{
struct BackendContext; // the backend's saved state

struct ExecutionContext
{
    BackendContext* backend = nullptr; // asm: the saved stack pointer itself; ucontext: a ucontext_t
    // Sanitizer bookkeeping (unused in plain builds).
    const void* stackBottom = nullptr;
    std::size_t stackSize = 0;
    void* tsanFiber = nullptr;
    bool ownsTsanFiber = false;
};

// `message` is what the first switch to the context passed (see SwitchContext).
using ContextEntry = void (*)(void* argument, void* message);

// Prepares `context` to run entry(argument, message) on [stackBase, stackBase + stackSize) the
// first time it is switched to. `entry` must never return.
void MakeContext(ExecutionContext& context, void* stackBase, std::size_t stackSize,
                 void* stackTop, ContextEntry entry, void* argument);

// Describes the calling thread's own stack as a context (for the sanitizers).
void InitThreadContext(ExecutionContext& context);

// Releases what MakeContext acquired (the ThreadSanitizer fiber); never for the running context.
void DestroyContext(ExecutionContext& context) noexcept;

// Saves the running state into `from` and continues `to`. Returns when something switches back,
// with the `message` that switch passed: the scheduler hands over the worker the context now
// runs on, which no thread-local read could give more cheaply. `fromFinished`: `from` will
// never run again (lets AddressSanitizer drop its fake stack). Plain builds with the assembly
// backend call the switch directly (no annotations to make).
#if TC_INLINE_SWITCH
inline void* SwitchContext(ExecutionContext& from, ExecutionContext& to, void* message = nullptr,
                           bool = false) noexcept
{
#if TC_SWITCH_PRESERVE_NONE
    return TC_SwitchContextLean(reinterpret_cast<void**>(&from.backend), to.backend, message);
#else
    return TC_SwitchContext(reinterpret_cast<void**>(&from.backend), to.backend, message);
#endif
}
#else
void* SwitchContext(ExecutionContext& from, ExecutionContext& to, void* message = nullptr,
                    bool fromFinished = false) noexcept;
#endif

#if TC_SWITCH_RUNS_THEN
// SwitchContext, and then(message) on the other side, in the switch, before that side continues
// (Switch_x86_64_sysv.S says why). Every switch into a context saved by this one must run the
// same step, since that context continues in its caller's caller when this call was its last.
inline void* SwitchContextThen(ExecutionContext& from, ExecutionContext& to, void* message,
                               void (*then)(void*) noexcept) noexcept
{
    return TC_SwitchContextThen(reinterpret_cast<void**>(&from.backend), to.backend, message, then);
}
#endif

// Called first thing by a fresh context's entry (tells AddressSanitizer the switch completed).
void OnContextStarted() noexcept;
} // namespace TC::detail
