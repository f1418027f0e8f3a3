// Converted threads: any OS thread waits through the same protocol as a task. Its entry and its
// futex word live on its own stack for the duration of the wait. A thread that hosts a
// scheduler keeps pumping it while it waits (a nested wait), to any depth; Stop's drains pump the
// same way (HostedSchedulers).

#include "Diagnostics.h"
#include "Futex.h"
#include "HostedSchedulers.h"
#include "Parker.h"
#include "Resume.h"
#include "SchedulerCore.h"
#include "ThreadState.h"
#include "TaskRegistry.h"
#include "Timers.h"

#include <TC/Checked.h>
#include <TC/Suspend.h>
#include <TC/detail/SpinLock.h>

#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace TC::detail
{
namespace
{
constexpr unsigned kThreadSpinIterations = 200;

// Work a hosted scheduler runs inside the wait (a coroutine whose resume throws, a hook) threw.
// The wait cannot end by it: its entry is published and its deadline armed, so unwinding would
// leave the primitive and the timer thread holding a dead stack; nor can it swallow it. Called
// inside the catch block, so the message names what was thrown.
[[noreturn]] void ReportWorkThrewInWait() noexcept
{
    std::string detail = "work of a scheduler this thread hosts, pumped while the thread waited, "
                         "threw out of the pump: ";
    detail += DescribeException(std::current_exception());
    detail += "; a converted-thread wait cannot end by an exception once its handle is published, "
              "so work a host runs must not throw out of its resume (catch it in the coroutine)";
    ReportRuleViolation("work threw inside a wait", detail.c_str());
}
// A wait that outlasted its spin shows in DumpTasks: its thread is listed (at its first such
// wait), and the wait is timed from now (checked builds timed it from its start). Off the fast
// path, where a wait resumed within its spin costs nothing for it. Returns the wait it is nested
// in (a wait inside work the thread pumps for its host), to be shown again once it ends.
[[gnu::noinline]] SuspendedTaskEntry* ShowWait(ThreadState& thread, SuspendedTaskEntry& entry) noexcept
{
    if (!thread.listed)
        ListThread(thread);
    if (entry.suspendedAt_ == 0)
        entry.suspendedAt_ = SteadyNowNanoseconds();
    return std::exchange(thread.waiting, &entry);
}
} // namespace

HostedSchedulers::HostedSchedulers(ThreadState& thread, const SchedulerCore* skip) noexcept
    : thread_(thread)
{
    // Inside a task (a Stop called there) the pump loop below it is suspended: pump nothing.
    if (thread.worker && thread.worker->current)
        return;
    SchedulerCore* held[ThreadState::kMaxHosts];
    const std::size_t count = SchedulerCore::HoldHostsForWait(thread, held);
    for (std::size_t i = 0; i < count; ++i)
    {
        if (held[i] == skip)
        {
            held[i]->ReleaseForWait(); // the caller holds it (a Stop of its own)
            continue;
        }
        parkers_[count_].word = nullptr;
        cores_[count_++] = held[i];
    }
}

HostedSchedulers::~HostedSchedulers()
{
    for (std::size_t i = 0; i < count_; ++i)
        cores_[i]->ReleaseForWait();
}

bool HostedSchedulers::PumpRound()
{
    bool ran = false;
    for (std::size_t i = 0; i < count_; ++i)
    {
        try
        {
            ran |= cores_[i]->PumpForWait(thread_);
        }
        catch (...)
        {
            ReportWorkThrewInWait();
        }
    }
    return ran;
}

bool HostedSchedulers::RegisterAndLook(std::atomic<std::uint32_t>& word)
{
    // Registered with every host before looking at their queues: a submission to any of them
    // after the look wakes `word`.
    for (std::size_t i = 0; i < count_; ++i)
    {
        parkers_[i].word = &word;
        cores_[i]->RegisterSleeper(parkers_[i]);
    }
    bool work = false;
    for (std::size_t i = 0; i < count_; ++i)
    {
        cores_[i]->StoreLoadBarrier();
        work |= cores_[i]->HasQueuedWork(thread_.waitLowest);
    }
    return work;
}

void HostedSchedulers::Unregister() noexcept
{
    for (std::size_t i = 0; i < count_; ++i)
        cores_[i]->UnregisterSleeper(parkers_[i]);
}

namespace
{
// The thread's slot for a wait at its current depth, made ready for `callback`; ~ThreadWaitDepth
// gives it back.
class ThreadWaitDepth
{
public:
    explicit ThreadWaitDepth(ThreadState& thread) noexcept : thread_(thread)
    {
        ThreadWaitSlot* slot = thread.waitDepth < ThreadState::kWaitSlots
                                   ? &thread.waitSlots[thread.waitDepth]
                                   : &spare_.emplace();
        ++thread.waitDepth;
        slot_ = slot;
    }
    ~ThreadWaitDepth() { --thread_.waitDepth; }
    ThreadWaitDepth(const ThreadWaitDepth&) = delete;
    ThreadWaitDepth& operator=(const ThreadWaitDepth&) = delete;

    SuspendedTaskEntry& Prepare(ISuspendCallback* callback) noexcept
    {
        SuspendedTaskEntry& entry = slot_->entry;
        slot_->word.store(0, std::memory_order_relaxed);
        entry.next = nullptr;
        entry.kind_ = WaiterKind::Thread;
        entry.timedOut_ = false;
        entry.state_.store(EntryState::Running, std::memory_order_relaxed);
        entry.callback_ = callback;
        entry.owner_ = &slot_->word;
        entry.executor_ = nullptr;
        entry.abandon_ = nullptr;
        entry.timer_ = nullptr;
        entry.hangPrev_ = entry.hangNext_ = nullptr;
        entry.suspendedAt_ = 0;
        entry.hangReported_ = false;
        return entry;
    }
    std::atomic<std::uint32_t>& Word() noexcept { return slot_->word; }

private:
    ThreadState& thread_;
    ThreadWaitSlot* slot_ = nullptr;
    std::optional<ThreadWaitSlot> spare_;
};
} // namespace

bool ThreadWait(ISuspendCallback* callback, Duration timeout, const std::stop_token* stop)
{
    ThreadState& thread = CurrentThread();
    ThreadWaitDepth depth(thread);
    SuspendedTaskEntry& entry = depth.Prepare(callback);
    std::atomic<std::uint32_t>& word = depth.Word();
    TimerNode node;
    const bool timed = !timeout.IsInfinite() && (stop || TimersEnabled());
    if (timed)
        PrepareTimer(entry, node, timeout);
    StopTrigger trigger(node, timed ? stop : nullptr); // a stop already requested marks the node
    MarkSuspended(entry);
    CallOnSuspended(entry);
    if (timed)
        ArmTimer(node);

    // The schedulers this thread hosts: their work runs while it waits, so work pinned to the
    // host cannot deadlock it. Each is held until the wait ends, so that one destroyed on another
    // thread meanwhile stays readable (PumpForWait then skips it); a wait begun after its
    // destruction does not see it.
    HostedSchedulers hosts(thread, nullptr);
    unsigned spins = 0;
    bool shown = false;                  // to DumpTasks, once it stopped spinning (ShowWait)
    SuspendedTaskEntry* outer = nullptr; // the wait this one is nested in, shown meanwhile
    while ((word.load(std::memory_order_acquire) & kWordResumed) == 0)
    {
        // Nested wait: run the hosted schedulers' work while waiting.
        if (hosts.PumpRound())
            continue;
        if (++spins < kThreadSpinIterations)
        {
            CpuRelax();
            continue;
        }
        if (!shown) [[unlikely]]
        {
            shown = true;
            outer = ShowWait(thread, entry);
        }
        if (hosts.Count() == 0)
        {
            SleepOnWord(word, kWordResumed);
            continue;
        }
        if (!hosts.RegisterAndLook(word))
            SleepOnWord(word, kWordResumed | kWordWork);
        hosts.Unregister();
    }
    if (shown)
        thread.waiting = outer;
    trigger.Disarm(); // before settling: a StopTimer in progress has returned
    return timed ? SettleTimer(entry, node) : true;
}
} // namespace TC::detail
