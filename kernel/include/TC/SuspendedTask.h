#pragma once
// SuspendedTask, SuspendedTaskEntry and TaskHandle: the handles the suspend protocol passes around.
//   void OnSuspended(TC::SuspendedTask task) noexcept override { waiters_.Push(task.Entry()); }

#include <TC/Checked.h>
#include <TC/detail/Export.h>

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

// The kernel's record of one suspended waiter; chain it through `next` without allocating.
/// - `next` is the primitive's from OnSuspended until ResumeTask, else the kernel's; every other
///   member is the kernel's.
/// - It lives in the task, on a converted thread's stack for the wait, or in a coroutine's awaiter.
struct SuspendedTaskEntry
{
    SuspendedTaskEntry* next = nullptr;

    // ---- kernel-private from here on ----
    detail::WaiterKind kind_ = detail::WaiterKind::Task;
    bool timedOut_ = false;
    bool hangReported_ = false; // checked builds
    std::atomic<detail::EntryState> state_{detail::EntryState::Running};
    // Checked builds: the suspension's number, carried by its handles (in padding).
    std::atomic<std::uint16_t> generation_{0};
    ISuspendCallback* callback_ = nullptr;
    void* owner_ = nullptr;        // Task*, ThreadWaiter* or coroutine frame address
    IExecutor* executor_ = nullptr; // coroutines: where ResumeTask submits the handle
    void* abandon_ = nullptr;       // coroutines: root of an unowned chain, freed if dropped
    detail::TimerNode* timer_ = nullptr; // set while a timed wait is armed
    // Checked builds: the registry behind hang reports.
    SuspendedTaskEntry* hangPrev_ = nullptr;
    SuspendedTaskEntry* hangNext_ = nullptr;
    // When the current suspension began (steady-clock nanoseconds; 0: not known): a task's from
    // its worker's coarse clock and a converted thread's once it stops spinning, in every build;
    // exact in checked builds.
    std::int64_t suspendedAt_ = 0;
    // What it waits on (ISuspendCallback::WaitedOn), taken at suspension: the std::type_info,
    // the object and the name the primitive gives (or nullptr). Atomic: a rule violation's report
    // reads them while the wrongly resumed waiter may be suspending again.
    std::atomic<const void*> callbackType_{nullptr};
    std::atomic<const void*> waitedOn_{nullptr};
    std::atomic<const char*> waitedOnName_{nullptr};
    void* listing_ = nullptr; // other builds: a coroutine's slot in the list of parked ones
};

namespace detail
{
struct HandleBits;
// Checked builds keep a suspension's generation in a handle's bits 48-63 (unused by user space).
inline constexpr unsigned kHandleGenerationShift = 48;
inline constexpr std::uintptr_t kHandleEntryMask = (std::uintptr_t{1} << kHandleGenerationShift) - 1;
} // namespace detail

// A handle to a suspended waiter, from OnSuspended to ResumeTask: pointer-sized, trivially
// copyable (a lock-free atomic), compares with nullptr. Made only by the kernel; each must reach
// ResumeTask exactly once.
/// - SuspendedTask(entry) rebuilds the handle from Entry() while the waiter is still suspended.
/// - Checked builds fail "handle resumed twice" also for a stale handle of an earlier suspension.
class SuspendedTask
{
public:
    constexpr SuspendedTask() noexcept = default;
    constexpr SuspendedTask(std::nullptr_t) noexcept {} // NOLINT: implicit, as atomics need
    // The handle of the waiter's current suspension; `entry` is nullptr or a waiter still waiting.
    explicit SuspendedTask(SuspendedTaskEntry* entry) noexcept
        : bits_(reinterpret_cast<std::uintptr_t>(entry))
    {
#if TC_CHECKED
        TC_CHECK((bits_ & ~detail::kHandleEntryMask) == 0, "address above 48 bits",
                 "a waiter's entry lives above the 48-bit address range checked handles assume");
        if (entry)
            bits_ |= std::uintptr_t{entry->generation_.load(std::memory_order_relaxed)}
                     << detail::kHandleGenerationShift;
#endif
    }

    SuspendedTaskEntry* Entry() const noexcept
    {
#if TC_CHECKED
        return reinterpret_cast<SuspendedTaskEntry*>(bits_ & detail::kHandleEntryMask);
#else
        return reinterpret_cast<SuspendedTaskEntry*>(bits_);
#endif
    }
    constexpr explicit operator bool() const noexcept { return bits_ != 0; }

    friend constexpr bool operator==(SuspendedTask, SuspendedTask) noexcept = default;
    friend constexpr bool operator==(SuspendedTask a, std::nullptr_t) noexcept
    {
        return a.bits_ == 0;
    }

private:
    friend struct detail::HandleBits;
    std::uintptr_t bits_ = 0;
};

namespace detail
{
// The kernel's view of a handle's generation (checked builds; 0 elsewhere).
struct HandleBits
{
    static std::uint16_t Generation(SuspendedTask task) noexcept
    {
        return static_cast<std::uint16_t>(task.bits_ >> kHandleGenerationShift);
    }
};
} // namespace detail

static_assert(sizeof(SuspendedTask) == sizeof(void*));
static_assert(std::is_trivially_copyable_v<SuspendedTask>);
static_assert(std::atomic<SuspendedTask>::is_always_lock_free);

// Names the running task or converted thread (GetCurrentTask()); it cannot be resumed.
class TaskHandle
{
public:
    constexpr TaskHandle() noexcept = default;
    constexpr explicit TaskHandle(const detail::TaskIdentity* id) noexcept : id_(id) {}

    constexpr explicit operator bool() const noexcept { return id_ != nullptr; }
    constexpr const detail::TaskIdentity* Identity() const noexcept { return id_; }
    // A task's id, unique in the process (never reused, unlike the handle); 0 for a thread.
    TC_API std::uint64_t Id() const noexcept;
    friend constexpr bool operator==(TaskHandle, TaskHandle) noexcept = default;

private:
    const detail::TaskIdentity* id_ = nullptr;
};
} // namespace TC
