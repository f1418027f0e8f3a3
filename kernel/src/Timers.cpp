// The timer thread and its intrusive pairing heap of deadlines (see Timers.h for the node states).
//
// Cost of a timed wait resumed early: arming takes the timer lock once and the waiter takes it
// once more to unlink its node; the timer thread is notified only when a new deadline becomes the
// earliest, so a deadline that is cancelled never wakes it on its own account. The lock is a
// SpinLock (one read-modify-write to take, a store to release: a std::mutex costs two RMWs), held
// only for a few heap steps; the timer thread sleeps on a condition_variable_any over it.

#include "Timers.h"

#include "Diagnostics.h"
#include "Resume.h"
#include "SchedulerCore.h"
#include "ThreadState.h"

#include <TC/Checked.h>
#include <TC/Suspend.h>
#include <TC/detail/DeadlineClock.h>
#include <TC/detail/SpinLock.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace TC::detail
{
std::int64_t SteadyNowNanoseconds() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

namespace
{
constexpr std::int64_t kLongestSleep = 3'600'000'000'000; // one hour, in nanoseconds

// Pairing heap over TimerNode: child = first child, sibling = next sibling, prev = parent for a
// first child and left sibling otherwise.
TimerNode* Meld(TimerNode* a, TimerNode* b) noexcept
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (b->deadline < a->deadline)
        std::swap(a, b);
    b->prev = a;
    b->sibling = a->child;
    if (a->child)
        a->child->prev = b;
    a->child = b;
    return a;
}

TimerNode* MergePairs(TimerNode* first) noexcept
{
    TimerNode* pairs = nullptr;
    while (first)
    {
        TimerNode* a = first;
        TimerNode* b = a->sibling;
        first = b ? b->sibling : nullptr;
        a->sibling = a->prev = nullptr;
        if (b)
        {
            b->sibling = b->prev = nullptr;
            a = Meld(a, b);
        }
        a->sibling = pairs;
        pairs = a;
    }
    TimerNode* result = nullptr;
    while (pairs)
    {
        TimerNode* next = pairs->sibling;
        pairs->sibling = nullptr;
        result = Meld(result, pairs);
        pairs = next;
    }
    return result;
}

class TimerService
{
public:
    static TimerService& Instance()
    {
        static TimerService service;
        return service;
    }

    void Start()
    {
        // Here rather than in the first timed wait: it reads the kernel's clock source from a
        // file once, and takes the first point of the deadline clock's calibration.
        DeadlineNowNanoseconds();
        std::lock_guard lock(lock_);
        if (thread_.joinable())
            return;
        thread_ = std::thread([this] { Run(); });
        enabled_.store(true, std::memory_order_release);
    }

    bool Enabled() const noexcept { return enabled_.load(std::memory_order_acquire); }

    bool Arm(TimerNode& node) noexcept
    {
        if (node.deadline == kExpiredWhenArmed && node.entry->kind_ != WaiterKind::Coroutine)
            return ArmExpired(node);
        bool notify = false;
        bool resumed = false;
        bool stopped = false; // a stop came while arming (only tasks and threads have one)
        {
            std::lock_guard lock(lock_);
            std::uint32_t state = node.state.load(std::memory_order_acquire);
            for (;;)
            {
                resumed = (state & kTimerResumed) != 0;
                stopped = !resumed && (state & kTimerStopped) != 0;
                if (stopped)
                    break; // not in the heap: fired below as an expired deadline
                if (!resumed)
                {
                    node.child = node.sibling = node.prev = nullptr;
                    root_ = Meld(root_, &node);
                    // Only a deadline earlier than the one the timer thread sleeps until needs
                    // it awake; so re-arming after a cancelled wait usually wakes nobody.
                    notify = node.deadline < sleepingUntil_;
                }
                // Resumed first: never armed, so nobody will touch the node again (Done).
                const std::uint32_t desired =
                    (state & ~kTimerArming) | (resumed ? kTimerDone : kTimerArmed);
                // A ResumeTask may set kTimerResumed concurrently (it does not take the lock).
                if (node.state.compare_exchange_strong(state, desired, std::memory_order_acq_rel,
                                                       std::memory_order_acquire))
                    break;
                if (!resumed)
                    Remove(node); // state changed under us: decide again
                notify = false;
            }
        }
        if (stopped)
            return ArmExpired(node);
        if (notify)
            wake_.notify_one();
        return resumed;
    }

    // A stop request (StopTimer): the node leaves the heap and fires here, as in Run.
    void Stop(TimerNode& node) noexcept
    {
        const std::uint32_t before = node.state.fetch_or(kTimerStopped, std::memory_order_acq_rel);
        if (!(before & kTimerArmed) || (before & kTimerResumed))
            return; // arming (Arm fires it), or already decided
        std::uint32_t state = 0;
        {
            std::lock_guard lock(lock_);
            state = node.state.load(std::memory_order_acquire);
            if (!(state & kTimerArmed) || (state & kTimerResumed))
                return; // the timer thread took it, or a resume settles it
            Remove(node);
            // A ResumeTask may set kTimerResumed concurrently (it does not take the lock).
            while (!node.state.compare_exchange_weak(state, (state & ~kTimerArmed) | kTimerFiring,
                                                     std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
            {
            }
        }
        Fire(node, state);
    }

    // A zero or negative timeout of a task or a converted thread: fired by the arming thread, with
    // no trip through the heap and the timer thread (25 us here). The node goes from arming
    // straight to firing, one RMW: the same states, in the same order, as a timer thread that
    // took the node the moment it was armed, so resumers and SettleTimer see nothing new
    // (tests/model/timed_wait.pml's timer may do just that). Not for coroutines: this runs inside
    // await_suspend, where a resume must not happen.
    static bool ArmExpired(TimerNode& node) noexcept
    {
        std::uint32_t state = node.state.load(std::memory_order_acquire);
        bool resumed = false;
        std::uint32_t desired = 0;
        do
        {
            // Resumed first: never armed, so nobody will touch the node again (Done). A
            // ResumeTask may set kTimerResumed concurrently: the CAS decides who was first.
            resumed = (state & kTimerResumed) != 0;
            desired = (state & ~kTimerArming) | (resumed ? kTimerDone : kTimerFiring);
        } while (!node.state.compare_exchange_weak(state, desired, std::memory_order_acq_rel,
                                                   std::memory_order_acquire));
        if (!resumed)
            Fire(node, state);
        return resumed;
    }

    // A parked coroutine's resume (Timers.h): true when the caller may submit it now.
    bool ReleaseForResume(TimerNode& node) noexcept
    {
        const std::uint32_t before = node.state.fetch_or(kTimerResumed, std::memory_order_acq_rel);
        if (before & kTimerArming)
            return false; // ArmTimer will see the mark, arm nothing, and its caller submits
        if (before & kTimerDone)
            return true; // fired, OnTimeout answered false, and the timer thread let go
        if (before & kTimerFiring)
            return false; // in OnTimeout: the timer thread submits once it lets go
        {
            std::lock_guard lock(lock_);
            const std::uint32_t state = node.state.load(std::memory_order_acquire);
            if (state & kTimerArmed)
            {
                // Out of the heap under the lock; nobody else writes the word now.
                Remove(node);
                node.state.store((state & ~kTimerArmed) | kTimerDone, std::memory_order_relaxed);
                return true;
            }
        }
        // The timer thread took it out after our mark, so it only marks it done (Fire): a
        // moment's wait, with no callback in it.
        WaitUntilDone(node);
        return true;
    }

    // The waiter runs again: make sure the timer thread is done with its node.
    void Settle(TimerNode& node) noexcept
    {
        std::uint32_t state = node.state.load(std::memory_order_acquire);
        if (state & kTimerDone)
            return;
        {
            std::unique_lock lock(lock_);
            while ((state = node.state.load(std::memory_order_acquire)) & kTimerArming)
            {
                lock.unlock();
                CpuRelax();
                lock.lock();
            }
            if (state & kTimerArmed)
            {
                // Out of the heap under the lock, and the one resume this wait gets has already
                // marked it: nothing else writes the word now, so a plain store (no RMW) does.
                Remove(node);
                node.state.store(state & ~kTimerArmed, std::memory_order_relaxed);
                return;
            }
        }
        if (state & kTimerFiring)
            WaitUntilDone(node);
    }

private:
    TimerService() = default;
    ~TimerService()
    {
        {
            std::lock_guard lock(lock_);
            stop_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable())
            thread_.join();
    }

    // Until the timer thread marks the node Done; yields after a short spin, so a timer thread
    // that lost its core gets it back.
    static void WaitUntilDone(const TimerNode& node) noexcept
    {
        for (unsigned spins = 0; !(node.state.load(std::memory_order_acquire) & kTimerDone);
             ++spins)
        {
            if (spins < 1000)
                CpuRelax();
            else
                std::this_thread::yield();
        }
    }

    void Remove(TimerNode& node) noexcept
    {
        if (&node == root_)
        {
            root_ = MergePairs(node.child);
            if (root_)
                root_->prev = nullptr;
        }
        else
        {
            if (node.prev->child == &node)
                node.prev->child = node.sibling;
            else
                node.prev->sibling = node.sibling;
            if (node.sibling)
                node.sibling->prev = node.prev;
            TimerNode* children = MergePairs(node.child);
            if (children)
                children->prev = nullptr;
            root_ = Meld(root_, children);
        }
        node.child = node.sibling = node.prev = nullptr;
    }

    void Run()
    {
        CurrentThread().isTimerThread = true; // it must never wait on anything but its deadlines
        std::unique_lock lock(lock_);
        while (!stop_)
        {
            if (!root_)
            {
                sleepingUntil_ = INT64_MAX;
                wake_.wait(lock);
                sleepingUntil_ = INT64_MIN; // awake: it looks at the heap before sleeping again
                continue;
            }
            const std::int64_t now = SteadyNowNanoseconds();
            if (root_->deadline > now)
            {
                sleepingUntil_ = root_->deadline;
                // Capped: wait_for adds the span to the clock's now, which overflows for a deadline
                // near INT64_MAX (a huge finite timeout) and then returns at once, for ever.
                wake_.wait_for(
                    lock, std::chrono::nanoseconds(std::min(root_->deadline - now, kLongestSleep)));
                sleepingUntil_ = INT64_MIN;
                continue;
            }
            TimerNode& node = *root_;
            Remove(node);
            std::uint32_t state = node.state.load(std::memory_order_acquire);
            while (!node.state.compare_exchange_weak(state, (state & ~kTimerArmed) | kTimerFiring,
                                                     std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
            {
            }
            lock.unlock();
            Fire(node, state);
            lock.lock();
        }
    }

    static void Fire(TimerNode& node, std::uint32_t state) noexcept
    {
        if (state & kTimerResumed)
        {
            // The resumer came first; it (or the waiter, settling) waits for this mark.
            node.state.fetch_or(kTimerDone, std::memory_order_release);
            return;
        }
        SuspendedTaskEntry* entry = node.entry;
        const bool parked = IsParkedCoroutine(*entry); // read while the frame surely lives
        ThreadState& thread = CurrentThread();
        EnterCallback(thread);
        const bool tookBack = entry->callback_->OnTimeout(SuspendedTask(entry));
        LeaveCallback(thread);
        if (!tookBack)
        {
            // A resumer has the handle; its ResumeTask makes the waiter runnable, and the waiter
            // waits in SettleTimer until this mark. A parked coroutine's resumer that found us
            // firing left the submission to us (ReleaseForResume): this RMW tells.
            const std::uint32_t before = node.state.fetch_or(kTimerDone, std::memory_order_acq_rel);
            if (parked && (before & kTimerResumed))
                Reschedule(entry); // the last access to the entry
            return;
        }
#if TC_CHECKED
        const EntryState previous = entry->state_.exchange(EntryState::Resumed, std::memory_order_acq_rel);
        if (previous != EntryState::Suspended) [[unlikely]]
        {
            const std::string detail = "OnTimeout of " + PrimitiveTypeOf(*entry)
                                       + " returned true for a handle that a resumer had already "
                                         "passed to ResumeTask; OnTimeout must claim the handle "
                                         "with the same exchange as resumers";
            ReportRuleViolation("handle resumed twice", detail.c_str());
        }
        UnregisterSuspended(*entry);
#endif
        entry->timedOut_ = true;
        node.state.fetch_or(kTimerDone, std::memory_order_release);
        Reschedule(entry); // the last access to the entry
    }

    SpinLock lock_; // held for one meld or one unlink (the timer thread: a few heap steps)
    std::condition_variable_any wake_;
    TimerNode* root_ = nullptr;
    std::int64_t sleepingUntil_ = INT64_MAX; // guarded by lock_; INT64_MIN while awake
    bool stop_ = false;
    std::atomic<bool> enabled_{false};
    std::thread thread_;
};
} // namespace

void PrepareTimer(SuspendedTaskEntry& entry, TimerNode& node, Duration timeout) noexcept
{
    // Never early, and cheaper than a steady-clock read where the TSC serves (DeadlineClock.h).
    if (!TimersEnabled())
        node.deadline = INT64_MAX; // a stop-aware wait: no limit without timers
    else
        node.deadline = timeout == Duration::Zero() // negatives are clamped to it
                            ? kExpiredWhenArmed
                            : DeadlineAfter(DeadlineNowNanoseconds(), timeout.Nanoseconds());
    node.child = node.sibling = node.prev = nullptr;
    node.entry = &entry;
    node.state.store(kTimerArming, std::memory_order_relaxed);
    entry.timedOut_ = false;
    entry.timer_ = &node;
}

bool ArmTimer(TimerNode& node) noexcept
{
    node.countedBy = nullptr;
    const SuspendedTaskEntry& entry = *node.entry;
    if (IsParkedCoroutine(entry))
    {
        // Counted before the deadline can fire or a resume be delivered (both uncount it), and
        // while the scheduler's own work runs here: its Stop cannot have finished.
        const Worker* worker = CurrentThread().worker;
        if (worker && static_cast<IExecutor*>(worker->core->owner) == entry.executor_)
        {
            node.countedBy = worker->core;
            worker->core->timedCoroutines.fetch_add(1, std::memory_order_relaxed);
        }
    }
    return TimerService::Instance().Arm(node);
}

bool DeliverCountedCoroutine(SuspendedTaskEntry& entry) noexcept
{
    SchedulerCore* core = entry.timer_->countedBy;
    if (!core)
        return false;
    const std::uintptr_t item = reinterpret_cast<std::uintptr_t>(entry.owner_) | kCoroutineTag;
    try
    {
        core->Enqueue(item, Priority::Normal, Arrival::Resume);
    }
    catch (...)
    {
        ReportRuleViolation("out of memory", "a timed coroutine's resumption could not be queued");
    }
    // release: the enqueue happens before the acquire load in Stop that sees the count drop.
    core->timedCoroutines.fetch_sub(1, std::memory_order_release);
    return true;
}

bool ReleaseTimerForResume(TimerNode& node) noexcept
{
    return TimerService::Instance().ReleaseForResume(node);
}

bool SettleTimer(SuspendedTaskEntry& entry, TimerNode& node) noexcept
{
    TimerService::Instance().Settle(node);
    return !entry.timedOut_;
}

void StopTimer(TimerNode& node) noexcept
{
    TimerService::Instance().Stop(node);
}
} // namespace TC::detail

namespace TC
{
void EnableTimers()
{
    detail::TimerService::Instance().Start();
}

bool TimersEnabled() noexcept
{
    return detail::TimerService::Instance().Enabled();
}
} // namespace TC
