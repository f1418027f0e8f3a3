#pragma once
// Task: the control block of one stackful task. It lives at the top of the task's own stack, with
// the callable just below it, so starting a task allocates nothing beyond the pooled stack.

#include "ThreadState.h"
#include "context/Context.h"

#include <TC/Scheduler.h>
#include <TC/SuspendedTask.h>

#include <atomic>
#include <cstdint>
#include <exception>

namespace TC::detail
{
class SchedulerCore;

struct StackMemory
{
    void* base = nullptr; // lowest address, guard page included
    std::size_t size = 0;
    StackGuard guard = StackGuard::Page;
    IStackAllocator* allocator = nullptr; // the scheduler's that allocated it
};

// Join word values besides a joiner's SuspendedTaskEntry*.
inline constexpr std::uintptr_t kJoinRunning = 0;
inline constexpr std::uintptr_t kJoinFinished = 1;
inline constexpr std::uintptr_t kJoinDetached = 2;

struct Task : TaskIdentity
{
    SuspendedTaskEntry entry; // the task's entry for every wait; `owner_` points back here
    ExecutionContext context;
    SchedulerCore* scheduler = nullptr;
    const TaskBody* body = nullptr;
    void* callable = nullptr;
    StackMemory stack;
    const char* name = "task";
    Priority priority = Priority::Normal;
    // Two owners: the task itself (until its stack is no longer in use) and its JoinHandle.
    std::atomic<std::uint32_t> references{2};
    // kJoinRunning, kJoinFinished, or the entry of the task/thread waiting in Join.
    std::atomic<std::uintptr_t> join{kJoinRunning};
    std::exception_ptr error;
    bool detached = false; // set once the JoinHandle let go before the task finished
};

inline Task* TaskOf(SuspendedTaskEntry* entry) noexcept
{
    return static_cast<Task*>(entry->owner_);
}
} // namespace TC::detail
