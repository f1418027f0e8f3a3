#pragma once
// The floating-point control state a task starts with: the rounding mode, the exception masks and
// the flush-to-zero and denormals-are-zero bits (x86-64: MXCSR and the x87 control word; AArch64:
// FPCR; elsewhere the <cfenv> environment). The switch carries each task's own state across its
// suspensions; a task that starts takes its worker's (Worker::taskStartControl, loaded by
// TaskMain), and a fresh context's first frame holds the binding thread's (ContextAsm.cpp).

#include <cstdint>

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <cfenv>
#endif

namespace TC::detail
{
struct FloatingPointControl
{
#if defined(__x86_64__)
    std::uint32_t mxcsr = 0x1F80;          // round to nearest, every exception masked
    std::uint16_t x87ControlWord = 0x037F; // the same, 64-bit precision
#elif defined(__aarch64__)
    std::uint64_t fpcr = 0;
#else
    std::fenv_t environment = *FE_DFL_ENV;
#endif
};

// The calling thread's control state, read once per worker thread or host pump turn and when a
// stack is bound to a fresh context. MXCSR's exception flags are status, not control: they are
// left out here, and a load keeps the thread's own (LoadFloatingPointControl).
inline FloatingPointControl ReadFloatingPointControl() noexcept
{
    FloatingPointControl control;
#if defined(__x86_64__)
    asm volatile("stmxcsr %0" : "=m"(control.mxcsr));
    asm volatile("fnstcw %0" : "=m"(control.x87ControlWord));
    control.mxcsr &= ~std::uint32_t{0x3F};
#elif defined(__aarch64__)
    asm volatile("mrs %0, fpcr" : "=r"(control.fpcr));
#else
    std::fegetenv(&control.environment);
#endif
    return control;
}

// Makes `control` the calling thread's control state. On x86-64 MXCSR's exception flags stay as
// they are (the ABI makes them caller-saved, and on Intel a stmxcsr after a change to them costs
// 14-27 ns, see Switch_x86_64_sysv.S), so ldmxcsr runs only when a control bit differs; fldcw
// always (0.7 ns on AMD Zen 5, cheap on Intel). AArch64 writes FPCR only when it differs (a
// write may serialise). The "memory" clobbers keep the compiler from moving memory accesses
// across the change.
inline void LoadFloatingPointControl(const FloatingPointControl& control) noexcept
{
#if defined(__x86_64__)
    constexpr std::uint32_t kFlags = 0x3F;
    std::uint32_t current = 0;
    asm volatile("stmxcsr %0" : "=m"(current));
    if ((current & ~kFlags) != (control.mxcsr & ~kFlags))
    {
        const std::uint32_t merged = (control.mxcsr & ~kFlags) | (current & kFlags);
        asm volatile("ldmxcsr %0" : : "m"(merged) : "memory");
    }
    asm volatile("fldcw %0" : : "m"(control.x87ControlWord) : "memory");
#elif defined(__aarch64__)
    std::uint64_t current = 0;
    asm volatile("mrs %0, fpcr" : "=r"(current));
    if (current != control.fpcr)
        asm volatile("msr fpcr, %0" : : "r"(control.fpcr) : "memory");
#else
    std::fesetenv(&control.environment);
#endif
}
} // namespace TC::detail
