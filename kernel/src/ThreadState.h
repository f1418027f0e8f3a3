#pragma once
// Per-thread kernel state: which worker this thread is running, whether it is inside a callback,
// and its identity when it waits as a converted thread.

#include <TC/Checked.h>
#include <TC/Scheduler.h>
#include <TC/SuspendedTask.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stop_token>

namespace TC::detail
{
struct Worker;
class SchedulerCore;

// What TaskHandle points at: a task or a converted thread.
struct TaskIdentity
{
    std::uint64_t id = 0; // a task's (NextUniqueId, at Start); 0 for a thread
};

// A converted thread's wait: its entry and the word its resumer sets.
struct ThreadWaitSlot
{
    SuspendedTaskEntry entry;
    std::atomic<std::uint32_t> word{0};
};

struct ThreadState : TaskIdentity
{
    Worker* worker = nullptr;     // set while this thread runs a worker loop or pumps a host scheduler
    // The schedulers without workers this thread has pumped (its hosts), whose work its
    // converted-thread waits keep running: up to kMaxHosts, a further one replaces the first.
    // Written by this thread, and cleared by whichever thread destroys such a scheduler or by
    // this thread's exit (SchedulerCore::BindHost), so they are atomics.
    static constexpr std::size_t kMaxHosts = 4;
    std::atomic<SchedulerCore*> hosts[kMaxHosts]{};
    bool IsHostOf(const SchedulerCore* core) const noexcept
    {
        for (const auto& host : hosts)
            if (host.load(std::memory_order_relaxed) == core)
                return true;
        return false;
    }
    // The lowest priority this thread's waits run on its hosts (TC::WaitLimit).
    Priority waitLowest = Priority::Low;
    int callbackDepth = 0;        // > 0 inside OnSuspended / OnTimeout (checked builds only)
    bool isWorkerThread = false;  // a scheduler's own worker thread
    bool isTimerThread = false;   // the one timer thread (EnableTimers)
    // Numbers the threads that pumped a host worker (0: not yet), for Worker::contextThread: an
    // address could be a dead thread's reused.
    std::uint64_t pumpSerial = 0;
    // The entry of this thread's converted-thread wait in progress once it outlasted its spin
    // (nullptr: none), and its place in the list DumpTasks reads (TaskRegistry.h), which it joins
    // at its first such wait.
    SuspendedTaskEntry* waiting = nullptr;
    // The slots of this thread's waits by nesting depth, kept for the thread's life (deeper ones
    // on the stack): a handle resumed once too often then finds a live entry whose generation
    // tells it apart (checked builds), not a stack slot reused by another call.
    static constexpr int kWaitSlots = 4;
    ThreadWaitSlot waitSlots[kWaitSlots]{};
    int waitDepth = 0;
    ThreadState* prevListed = nullptr;
    ThreadState* nextListed = nullptr;
    bool listed = false;
    // A converted thread's stop token (TaskStop.h): its innermost StopScope's, or nullptr.
    const std::stop_token* stopToken = nullptr;
    int osThreadId = 0;       // gettid(), for the dump
    unsigned long handle = 0; // pthread_self(), for its name
};

// The calling thread's state. Never inlined: a task may continue on another thread after any
// switch, and the compiler must not keep the address of one thread's state across it.
[[gnu::noinline]] ThreadState& CurrentThread() noexcept;

// The same state, read in place (no call). Compilers treat a thread_local's address as fixed
// within a function, so this is for functions in whose own body no switch happens -- ResumeTask,
// and SuspendTask up to its call into the switch, after which it reads no thread state -- and
// that are not inlined into one that switches (they live in their own translation unit, and the
// kernel is not built with link-time optimization).
extern constinit thread_local ThreadState threadState;
inline ThreadState& CurrentThreadInSwitchFreeCode() noexcept
{
    return threadState;
}

// Around a callback (OnSuspended, OnTimeout): only checked mode reads the depth (a wait inside a
// callback), so a release build keeps the two stores off every suspend's path.
inline void EnterCallback([[maybe_unused]] ThreadState& thread) noexcept
{
#if TC_CHECKED
    ++thread.callbackDepth;
#endif
}
inline void LeaveCallback([[maybe_unused]] ThreadState& thread) noexcept
{
#if TC_CHECKED
    --thread.callbackDepth;
#endif
}
} // namespace TC::detail
