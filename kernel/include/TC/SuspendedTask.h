#pragma once
// SuspendedTask, SuspendedTaskEntry and TaskHandle: the handles the suspend protocol passes around.

#include <TC/Checked.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace TC
{
class ISuspendCallback;
class IExecutor;

namespace detail
{
struct TimerNode;
struct TaskIdentity;

// What kind of waiter an entry stands for; decides what ResumeTask does with it.
enum class WaiterKind : std::uint8_t
{
    Task,      // a stackful task: queued on its scheduler
    Thread,    // a converted thread: woken through its futex word
    Coroutine, // a C++20 coroutine: handed to the executor current when it suspended
};

// Checked mode follows each entry through Running -> Suspended -> Resumed.
enum class EntryState : std::uint8_t
{
    Running,
    Suspended, // handed to OnSuspended; the primitive owns the handle
    Resumed,   // passed to ResumeTask (or taken back by a timeout)
};
} // namespace detail

// The record the kernel keeps for one suspended waiter. Its leading member `next` is an
// intrusive link that belongs to the primitive from the moment OnSuspended receives the handle
// until the primitive passes the handle to ResumeTask, so primitives chain waiters on a
// ConcurrentStack or BasicStack without allocating. Outside that window `next` belongs to the
// kernel. Every other member is the kernel's; primitives never touch them.
//
// Lifetime: a task's entry lives in the task, a converted thread's on that thread's stack for
// the duration of the wait, and a coroutine's in its awaiter inside the coroutine frame.
struct SuspendedTaskEntry
{
    SuspendedTaskEntry* next = nullptr;

    // ---- kernel-private from here on ----
    detail::WaiterKind kind_ = detail::WaiterKind::Task;
    bool timedOut_ = false;
    std::atomic<detail::EntryState> state_{detail::EntryState::Running};
    ISuspendCallback* callback_ = nullptr;
    void* owner_ = nullptr;        // Task*, ThreadWaiter* or coroutine frame address
    IExecutor* executor_ = nullptr; // coroutines: where ResumeTask submits the handle
    void* abandon_ = nullptr;       // coroutines: root of an unowned chain, freed if dropped
    detail::TimerNode* timer_ = nullptr; // set while a timed wait is armed
    // Checked builds: the registry of suspended waiters behind hang reports.
    SuspendedTaskEntry* hangPrev_ = nullptr;
    SuspendedTaskEntry* hangNext_ = nullptr;
    std::int64_t suspendedAt_ = 0;
    // What it waits on (ISuspendCallback::WaitedOn), taken at suspension: the std::type_info,
    // the object and the name the primitive gives (or nullptr).
    const void* callbackType_ = nullptr;
    const void* waitedOn_ = nullptr;
    const char* waitedOnName_ = nullptr;
    bool hangReported_ = false;
};

// A handle to a suspended waiter, as OnSuspended receives it and ResumeTask takes it.
// Pointer-sized and trivially copyable, so std::atomic<SuspendedTask> is lock-free; compares with
// nullptr; contextually converts to bool. Only the kernel makes non-null handles, and each one
// must reach ResumeTask exactly once (checked mode catches a second time while it can).
class SuspendedTask
{
public:
    constexpr SuspendedTask() noexcept = default;
    constexpr SuspendedTask(std::nullptr_t) noexcept {} // NOLINT: implicit, as atomics need
    constexpr explicit SuspendedTask(SuspendedTaskEntry* entry) noexcept : entry_(entry) {}

    constexpr SuspendedTaskEntry* Entry() const noexcept { return entry_; }
    constexpr explicit operator bool() const noexcept { return entry_ != nullptr; }

    friend constexpr bool operator==(SuspendedTask, SuspendedTask) noexcept = default;
    friend constexpr bool operator==(SuspendedTask a, std::nullptr_t) noexcept
    {
        return a.entry_ == nullptr;
    }

private:
    SuspendedTaskEntry* entry_ = nullptr;
};

static_assert(sizeof(SuspendedTask) == sizeof(void*));
static_assert(std::is_trivially_copyable_v<SuspendedTask>);
static_assert(std::atomic<SuspendedTask>::is_always_lock_free);

// Names the running task or converted thread (GetCurrentTask()). It identifies; it does not
// resume: ResumeTask has no overload for it, so resuming a running task does not compile.
class TaskHandle
{
public:
    constexpr TaskHandle() noexcept = default;
    constexpr explicit TaskHandle(const detail::TaskIdentity* id) noexcept : id_(id) {}

    constexpr explicit operator bool() const noexcept { return id_ != nullptr; }
    constexpr const detail::TaskIdentity* Identity() const noexcept { return id_; }
    friend constexpr bool operator==(TaskHandle, TaskHandle) noexcept = default;

private:
    const detail::TaskIdentity* id_ = nullptr;
};
} // namespace TC
