#pragma once
// Task: the control block of one stackful task. It lives in a pooled task block with the callable
// right after it when the callable fits (kTaskBlockSize), and the task takes a stack only when it
// first runs and gives it back when it ends: a queued task and a finished one hold no stack. A
// larger callable lives at the top of a stack taken when the task is started.

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

// A task stack: `guardBytes` of inaccessible guard region at `base`, then `size` bytes the task
// may use. It always goes back to `origin`, the core that took it (TaskMemory.cpp).
struct StackMemory
{
    void* base = nullptr; // lowest address, guard included; nullptr until the stack is taken
    std::size_t size = 0; // usable bytes, above the guard
    std::size_t guardBytes = 0; // 0: StackGuard::None
    SchedulerCore* origin = nullptr; // its allocator made it; its pool takes it back
    unsigned char* Bottom() const noexcept { return static_cast<unsigned char*>(base) + guardBytes; }
    unsigned char* Top() const noexcept { return Bottom() + size; }
};

// Join word values besides a joiner's SuspendedTaskEntry*.
inline constexpr std::uintptr_t kJoinRunning = 0;
inline constexpr std::uintptr_t kJoinFinished = 1;
inline constexpr std::uintptr_t kJoinDetached = 2;

struct Task : TaskIdentity
{
    // The task's entry for every wait; `owner_` points back here. Its first cache line is what a
    // resumer on another thread reads, so a suspension writes it only where a field changes
    // (SuspendTask): a line the waiter dirtied would cost that resumer a transfer.
    SuspendedTaskEntry entry;
    ExecutionContext context;
    SchedulerCore* scheduler = nullptr; // the one it runs on now
    // The one it was started on, which made its block and its stack: both go back there, where
    // tasks of that scheduler take them again, wherever the task ended (TaskMemory.cpp).
    SchedulerCore* home = nullptr;
    const TaskBody* body = nullptr;
    void* callable = nullptr;
    StackMemory stack; // the size is set at Start; the memory is taken when the task first runs
    const char* name = "task";
    Priority priority = Priority::Normal;
    // kJoinRunning, kJoinFinished, kJoinDetached, or the entry of the task/thread waiting in
    // Join. It also decides who frees the block: whichever of the task's end and the handle's
    // release comes second (EndForJoiner, JoinHandle::Join and Detach).
    std::atomic<std::uintptr_t> join{kJoinRunning};
    std::exception_ptr error;
    bool contextReady = false; // it has a stack and a context: it has run, or can be switched to
    bool blockFromWorker = false; // started on one of its scheduler's workers (where the block goes back)
};

// A task block: the Task, then room for a callable that fits (its own cache lines).
inline constexpr std::size_t kTaskBlockAlign = 64;
inline constexpr std::size_t kTaskBytes = (sizeof(Task) + kTaskBlockAlign - 1) / kTaskBlockAlign * kTaskBlockAlign;
inline constexpr std::size_t kTaskBlockSize = kTaskBytes + 128;

// A free task block, in a worker's cache or the scheduler's pool.
struct FreeTaskBlock
{
    FreeTaskBlock* next;
};

inline Task* TaskOf(SuspendedTaskEntry* entry) noexcept
{
    return static_cast<Task*>(entry->owner_);
}
} // namespace TC::detail
