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
#include <stop_token>

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

// What a task is doing, for TC::Diagnostics::DumpTasks and the debugger extension. Written only
// where a task's life already writes its block: at its start, by the task itself as it suspends
// (on the line its switch saves into), by whoever resumes it, at its end and when its block is
// freed. A task that runs is the `current` of its worker, whatever this says.
enum class TaskRunState : std::uint8_t
{
    Free = 0,       // the block holds no task (in a cache or pool, or never used)
    Queued,         // started, never run yet
    Ready,          // resumed (or yielded, moved): queued to run again
    Suspended,      // waits untimed in SuspendTask
    SuspendedTimed, // waits in SuspendTaskFor, with a deadline (entry.timer_)
    Finished,       // ended; its JoinHandle has not let go yet
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
    // On the line `context` shares (the one each switch away saves into), not the entry's first.
    // Written with plain stores on the task's paths (SetRunState), read racily by DumpTasks
    // (ReadRunState): an atomic store there would make the compiler reload what it had cached
    // across it, on every suspension.
    TaskRunState runState = TaskRunState::Queued;
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
    // The only worker that runs it (TaskOptions::worker), or kAnyWorker; always kAnyWorker on a
    // scheduler without workers.
    std::uint32_t pin = kAnyWorker;
    // kJoinRunning, kJoinFinished, kJoinDetached, or the entry of the task/thread waiting in
    // Join. It also decides who frees the block: whichever of the task's end and the handle's
    // release comes second (EndForJoiner, JoinHandle::Join and Detach).
    std::atomic<std::uintptr_t> join{kJoinRunning};
    std::exception_ptr error;
    bool contextReady = false; // it has a stack and a context: it has run, or can be switched to
    bool blockFromWorker = false; // started on one of its scheduler's workers (where the block goes back)
    bool blockFromAllocator = false; // its block came from an IBlockAllocator (BlockRecord::allocator)
    // TaskOptions::stopToken, and the one its waits use: &startToken, a StopScope's, or nullptr.
    std::stop_token startToken;
    const std::stop_token* stopToken = nullptr;
};

// A task block: the Task, then room for a callable that fits (its own cache lines).
inline constexpr std::size_t kTaskBlockAlign = 64;
inline constexpr std::size_t kTaskBytes = (sizeof(Task) + kTaskBlockAlign - 1) / kTaskBlockAlign * kTaskBlockAlign;
inline constexpr std::size_t kTaskBlockSize = kTaskBytes + 128;
// What a block's allocation holds: the block, then its BlockRecord (TaskRegistry.h).
inline constexpr std::size_t kTaskBlockAllocation = kTaskBlockSize + 64;

// A free task block, in a worker's cache or the scheduler's pool.
struct FreeTaskBlock
{
    FreeTaskBlock* next;
};

inline void SetRunState(Task& task, TaskRunState state) noexcept
{
    task.runState = state;
}

// Before the block is freed: a store the compiler may not drop as dead before ~Task.
inline void SetRunStateBeforeFree(Task& task) noexcept
{
    __atomic_store_n(reinterpret_cast<std::uint8_t*>(&task.runState),
                     static_cast<std::uint8_t>(TaskRunState::Free), __ATOMIC_RELAXED);
}

// A snapshot for DumpTasks, taken while the task may be writing it.
inline TaskRunState ReadRunState(const Task& task) noexcept
{
    return static_cast<TaskRunState>(
        __atomic_load_n(reinterpret_cast<const std::uint8_t*>(&task.runState), __ATOMIC_RELAXED));
}

inline Task* TaskOf(SuspendedTaskEntry* entry) noexcept
{
    return static_cast<Task*>(entry->owner_);
}
} // namespace TC::detail
