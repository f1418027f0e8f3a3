// The portable fallback: MakeContext and SwitchContext over POSIX ucontext. Slower (swapcontext
// saves the signal mask with a system call) but needs no assembly.

#include "context/Context.h"
#include "context/ContextSanitizers.h"

#include <cstdint>
#include <new>
#include <ucontext.h>

namespace TC::detail
{
struct BackendContext
{
    ucontext_t context;
    ContextEntry entry = nullptr;
    void* argument = nullptr;
    void* message = nullptr; // left here by the switch that continues this context
};

namespace
{
// makecontext passes int arguments only, so the BackendContext pointer travels in two halves.
void Trampoline(unsigned high, unsigned low)
{
    const auto address = (static_cast<std::uintptr_t>(high) << 32) | low;
    auto* backend = reinterpret_cast<BackendContext*>(address);
    backend->entry(backend->argument, backend->message);
}
} // namespace

void MakeContext(ExecutionContext& context, void* stackBase, std::size_t stackSize, void* stackTop,
                 ContextEntry entry, void* argument)
{
    // The ucontext_t lives at the top of the usable stack, so a task allocates nothing extra.
    auto top = reinterpret_cast<std::uintptr_t>(stackTop);
    top = (top - sizeof(BackendContext)) & ~std::uintptr_t{63};
    auto* backend = ::new (reinterpret_cast<void*>(top)) BackendContext;
    backend->entry = entry;
    backend->argument = argument;
    getcontext(&backend->context);
    backend->context.uc_stack.ss_sp = stackBase;
    backend->context.uc_stack.ss_size = (top - reinterpret_cast<std::uintptr_t>(stackBase)) & ~std::uintptr_t{15};
    backend->context.uc_link = nullptr;
    const auto address = reinterpret_cast<std::uintptr_t>(backend);
    makecontext(&backend->context, reinterpret_cast<void (*)()>(&Trampoline), 2,
                static_cast<unsigned>(address >> 32), static_cast<unsigned>(address & 0xffffffffu));
    context.backend = backend;
    DescribeFiberStack(context, stackBase, stackSize);
}

void InitThreadContext(ExecutionContext& context)
{
    if (context.backend == nullptr)
        context.backend = new BackendContext;
    DescribeThreadStack(context);
}

void DestroyContext(ExecutionContext& context) noexcept
{
    ReleaseFiber(context);
    context.backend = nullptr;
}

void* SwitchContext(ExecutionContext& from, ExecutionContext& to, void* message,
                    bool fromFinished) noexcept
{
    SwitchAnnotation annotation;
    annotation.Before(to, fromFinished);
    to.backend->message = message;
    swapcontext(&from.backend->context, &to.backend->context);
    annotation.After();
    return from.backend->message;
}

void OnContextStarted() noexcept
{
    SwitchAnnotation{}.After();
}
} // namespace TC::detail
