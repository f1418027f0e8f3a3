// The stack overflow report: a SIGSEGV handler, on an alternate signal stack, that names the
// task whose guard region the fault hit, then lets the fault go where it went before.

#include "StackOverflow.h"

#include "SchedulerCore.h"
#include "Task.h"

#include <TC/StackAllocator.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace TC::detail
{
namespace
{
std::mutex installLock; // SetStackOverflowReport and the first install
bool reportEnabled = true;           // under installLock
bool installedOnce = false;          // under installLock
struct sigaction previousAction {};  // what the handler replaced; written before it is installed

// Appends `text` to `buffer` (at `used`), as far as it fits.
void Append(char* buffer, std::size_t capacity, std::size_t& used, const char* text) noexcept
{
    for (; *text && used < capacity; ++text)
        buffer[used++] = *text;
}

void AppendNumber(char* buffer, std::size_t capacity, std::size_t& used, std::size_t value) noexcept
{
    char digits[24];
    std::size_t count = 0;
    do
    {
        digits[count++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    while (count != 0 && used < capacity)
        buffer[used++] = digits[--count];
}

// Async-signal-safe: write(2) only, no allocation, no lock.
void Report(const Task& task) noexcept
{
    char message[512];
    std::size_t used = 0;
    Append(message, sizeof message, used, "TC: stack overflow in task '");
    Append(message, sizeof message - 64, used, task.name ? task.name : "task");
    Append(message, sizeof message, used, "' (stack ");
    AppendNumber(message, sizeof message, used, task.stack.size / 1024);
    Append(message, sizeof message, used, " KiB, guard ");
    AppendNumber(message, sizeof message, used, task.stack.guardBytes / 1024);
    Append(message, sizeof message, used, " KiB)\n");
    for (std::size_t written = 0; written < used;)
    {
        const ssize_t n = write(STDERR_FILENO, message + written, used - written);
        if (n <= 0)
            break;
        written += static_cast<std::size_t>(n);
    }
}

// The task running on this thread, if the fault address lies in its guard region.
const Task* GuardOwner(const void* faultAddress) noexcept
{
    const Worker* worker = threadState.worker;
    const Task* task = worker ? worker->current : nullptr;
    if (!task || !task->stack.base || task->stack.guardBytes == 0)
        return nullptr;
    const auto address = reinterpret_cast<std::uintptr_t>(faultAddress);
    const auto base = reinterpret_cast<std::uintptr_t>(task->stack.base);
    return address >= base && address < base + task->stack.guardBytes ? task : nullptr;
}

// Passes the signal to the handler installed before ours, on this (alternate) stack: an
// overflowed task's stack has no room for it. True if there was one to call.
bool CallPrevious(int signalNumber, siginfo_t* info, void* context) noexcept
{
    if (previousAction.sa_flags & SA_SIGINFO)
    {
        if (!previousAction.sa_sigaction)
            return false;
        previousAction.sa_sigaction(signalNumber, info, context);
        return true;
    }
    if (previousAction.sa_handler == SIG_DFL || previousAction.sa_handler == SIG_IGN)
        return false;
    previousAction.sa_handler(signalNumber);
    return true;
}

void OnSegv(int signalNumber, siginfo_t* info, void* context)
{
    const int savedErrno = errno;
    const Task* overflowed = GuardOwner(info ? info->si_addr : nullptr);
    if (overflowed)
        Report(*overflowed);
    if (!CallPrevious(signalNumber, info, context) || overflowed)
    {
        // Nothing else took it, or it returned from an overflow: the disposition before ours
        // (the default, if there was no handler) takes the fault, which repeats as this returns
        // -- the process dies with SIGSEGV, as it would have without the report. A SIGSEGV sent
        // by kill(2) is raised again (pending until then).
        if (previousAction.sa_handler == SIG_IGN && !(previousAction.sa_flags & SA_SIGINFO))
            previousAction.sa_handler = SIG_DFL; // a fault cannot be ignored
        sigaction(SIGSEGV, &previousAction, nullptr);
        if (info && info->si_code <= 0)
            raise(SIGSEGV);
    }
    errno = savedErrno;
}

bool IsOurs(const struct sigaction& action) noexcept
{
    return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == &OnSegv;
}

bool IsDefault(const struct sigaction& action) noexcept
{
    return !(action.sa_flags & SA_SIGINFO) && (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN);
}

// Under installLock. The first time over whatever is there; later only over the default (a
// forked child that reset it): a handler installed after ours took its place on purpose, and
// may chain back to ours, so ours chaining to it could loop.
void InstallLocked(bool overAnything) noexcept
{
    struct sigaction current {};
    if (sigaction(SIGSEGV, nullptr, &current) != 0 || IsOurs(current))
        return;
    if (installedOnce && !overAnything && !IsDefault(current))
        return;
    previousAction = current;
    struct sigaction ours {};
    ours.sa_sigaction = &OnSegv;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGSEGV, &ours, nullptr) == 0)
        installedOnce = true;
}

// This thread's alternate signal stack, when the report made it; freed as the thread exits.
struct AlternateStack
{
    void* memory = nullptr;
    std::size_t bytes = 0;
    ~AlternateStack()
    {
        if (!memory)
            return;
        stack_t current{};
        if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == static_cast<unsigned char*>(memory) + Page())
        {
            stack_t off{};
            off.ss_flags = SS_DISABLE;
            sigaltstack(&off, nullptr);
        }
        munmap(memory, bytes);
    }
    static std::size_t Page() noexcept { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
};
thread_local AlternateStack alternateStack;
constinit thread_local bool threadPrepared = false;

void GiveThreadAnAlternateStack() noexcept
{
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE))
        return; // it has one (a sanitizer's, the program's): kept
    // Room for the handler and for one chained to it (a sanitizer's report), above a guard page.
    const std::size_t page = AlternateStack::Page();
    const std::size_t usable = std::max<std::size_t>(64 * 1024, 4 * static_cast<std::size_t>(SIGSTKSZ));
    const std::size_t bytes = page + (usable + page - 1) / page * page;
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return; // no report on this thread's overflows; nothing else changes
    mprotect(memory, page, PROT_NONE);
    stack_t stack{};
    stack.ss_sp = static_cast<unsigned char*>(memory) + page;
    stack.ss_size = bytes - page;
    if (sigaltstack(&stack, nullptr) != 0)
    {
        munmap(memory, bytes);
        return;
    }
    alternateStack.memory = memory;
    alternateStack.bytes = bytes;
}
} // namespace

void InstallStackOverflowReport() noexcept
{
    std::lock_guard lock(installLock);
    if (reportEnabled)
        InstallLocked(false);
}

void PrepareThreadForTasks() noexcept
{
    if (threadPrepared)
        return;
    threadPrepared = true;
    {
        std::lock_guard lock(installLock);
        if (!reportEnabled)
            return;
        InstallLocked(false);
    }
    GiveThreadAnAlternateStack();
}
} // namespace TC::detail

namespace TC
{
void SetStackOverflowReport(bool enabled) noexcept
{
    using namespace detail;
    std::lock_guard lock(installLock);
    reportEnabled = enabled;
    if (enabled)
    {
        InstallLocked(true);
        return;
    }
    struct sigaction current {};
    if (sigaction(SIGSEGV, nullptr, &current) == 0 && IsOurs(current))
        sigaction(SIGSEGV, &previousAction, nullptr);
}
} // namespace TC
