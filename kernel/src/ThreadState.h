#pragma once
// Per-thread kernel state: which worker this thread is running, whether it is inside a callback,
// and its identity when it waits as a converted thread.

#include <TC/SuspendedTask.h>

#include <cstdint>

namespace TC::detail
{
struct Worker;
class SchedulerCore;

// What TaskHandle points at: a task or a converted thread.
struct TaskIdentity
{
};

struct ThreadState : TaskIdentity
{
    Worker* worker = nullptr;     // set while this thread runs a worker loop or pumps a host scheduler
    SchedulerCore* host = nullptr; // the host-pumped scheduler this thread pumps (its host)
    int callbackDepth = 0;        // > 0 inside OnSuspended / OnTimeout
    bool isWorkerThread = false;  // a scheduler's own worker thread
};

// The calling thread's state. Never inlined: a task may continue on another thread after any
// switch, and the compiler must not keep the address of one thread's state across it.
[[gnu::noinline]] ThreadState& CurrentThread() noexcept;
} // namespace TC::detail
