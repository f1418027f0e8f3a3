// MakeContext and SwitchContext over the assembly switch (Switch_<abi>.S).

#include "context/Context.h"
#include "context/ContextSanitizers.h"
#include "context/FloatingPointControl.h"

#include <cstdint>
#include <cstring>

extern "C" void* TC_SwitchContext(void** saveSp, void* loadSp, void* message);
extern "C" void TC_ContextStart();
#if defined(__x86_64__)
extern "C" void TC_ContextStartLean();
#endif

namespace TC::detail
{
namespace
{
#if defined(__x86_64__)
// Mirrors the frame Switch_x86_64_sysv.S's full switch pops: control words, r15, r14, r13, r12,
// rbx, rbp, rip. Its first 32 bytes are also the lean switch's frame (control words, rbx, rbp,
// rip), so either switch can start the context: the full one continues in TC_ContextStart with
// the argument in r15 and the entry in r14, the lean one in TC_ContextStartLean with them in rbx
// and rbp.
struct InitialFrame
{
    std::uint32_t mxcsr;
    std::uint16_t x87ControlWord;
    std::uint16_t padding;
    std::uint64_t r15, r14, r13, r12, rbx, rbp, rip;
};
static_assert(sizeof(InitialFrame) == 64, "Switch_x86_64_sysv.S pops exactly 64 bytes");

void FillInitialFrame(InitialFrame& frame, ContextEntry entry, void* argument)
{
    std::memset(&frame, 0, sizeof frame);
    // The control words the first switch in loads: the binding thread's own, in force until the
    // entry sets what a task starts with (TaskMain: its worker's, FloatingPointControl.h).
    const FloatingPointControl control = ReadFloatingPointControl();
    frame.mxcsr = control.mxcsr;
    frame.x87ControlWord = control.x87ControlWord;
    frame.r15 = reinterpret_cast<std::uint64_t>(argument);           // lean: rbx
    frame.r14 = reinterpret_cast<std::uint64_t>(entry);              // lean: rbp
    frame.r13 = reinterpret_cast<std::uint64_t>(&TC_ContextStartLean); // lean: rip
    frame.rip = reinterpret_cast<std::uint64_t>(&TC_ContextStart);
}
#elif defined(__aarch64__)
// Mirrors the frame Switch_aarch64.S loads: x19..x30, d8..d15, fpcr, padding.
struct InitialFrame
{
    std::uint64_t x[12]; // x19..x30
    std::uint64_t d[8];  // d8..d15
    std::uint64_t fpcr;
    std::uint64_t padding;
};
static_assert(sizeof(InitialFrame) == 176, "Switch_aarch64.S loads exactly 176 bytes");

void FillInitialFrame(InitialFrame& frame, ContextEntry entry, void* argument)
{
    std::memset(&frame, 0, sizeof frame);
    frame.fpcr = ReadFloatingPointControl().fpcr; // as on x86-64, until TaskMain sets its worker's
    frame.x[0] = reinterpret_cast<std::uint64_t>(argument);         // x19
    frame.x[1] = reinterpret_cast<std::uint64_t>(entry);            // x20
    frame.x[11] = reinterpret_cast<std::uint64_t>(&TC_ContextStart); // x30
}
#else
#error "ContextAsm.cpp is built only for x86-64 and AArch64; configure with TC_CONTEXT=ucontext"
#endif
} // namespace

void MakeContext(ExecutionContext& context, void* stackBase, std::size_t stackSize, void* stackTop,
                 ContextEntry entry, void* argument)
{
    auto top = reinterpret_cast<std::uintptr_t>(stackTop) & ~std::uintptr_t{15};
    auto* frame = reinterpret_cast<InitialFrame*>(top - sizeof(InitialFrame));
    FillInitialFrame(*frame, entry, argument);
    context.backend = reinterpret_cast<BackendContext*>(frame);
    DescribeFiberStack(context, stackBase, stackSize);
}

void InitThreadContext(ExecutionContext& context)
{
    DescribeThreadStack(context);
}

void DestroyContext(ExecutionContext& context) noexcept
{
    ReleaseFiber(context);
    context.backend = nullptr;
}

#if !TC_INLINE_SWITCH
void* SwitchContext(ExecutionContext& from, ExecutionContext& to, void* message,
                    bool fromFinished) noexcept
{
    SwitchAnnotation annotation;
    annotation.Before(to, fromFinished);
    void* received = TC_SwitchContext(reinterpret_cast<void**>(&from.backend), to.backend, message);
    annotation.After();
    return received;
}
#endif

void OnContextStarted() noexcept
{
    SwitchAnnotation{}.After();
}
} // namespace TC::detail
