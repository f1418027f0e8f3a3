// Converted threads: any OS thread waits through the same protocol as a task. Its entry and its
// futex word live on its own stack for the duration of the wait. A thread that hosts a
// scheduler keeps pumping it while it waits (seed 001's nested wait), to any depth.

#include "Diagnostics.h"
#include "Futex.h"
#include "Parker.h"
#include "Resume.h"
#include "SchedulerCore.h"
#include "ThreadState.h"
#include "Timers.h"

#include <TC/Suspend.h>
#include <TC/detail/SpinLock.h>

namespace TC::detail
{
namespace
{
constexpr unsigned kThreadSpinIterations = 200;
}

bool ThreadWait(ISuspendCallback* callback, Duration timeout)
{
    ThreadState& thread = CurrentThread();
    std::atomic<std::uint32_t> word{0};
    SuspendedTaskEntry entry;
    entry.kind_ = WaiterKind::Thread;
    entry.owner_ = &word;
    entry.callback_ = callback;
    TimerNode node;
    const bool timed = !timeout.IsInfinite() && TimersEnabled();
    if (timed)
        PrepareTimer(entry, node, timeout);
#if TC_CHECKED
    entry.state_.store(EntryState::Suspended, std::memory_order_relaxed);
    RegisterSuspended(entry);
#endif
    CallOnSuspended(entry);
    if (timed)
        ArmTimer(node);

    // acquire: pairs with ~Scheduler's clearing; a wait begun after it never pumps the core.
    SchedulerCore* host = thread.host.load(std::memory_order_acquire);
    Parker parker{&word};
    unsigned spins = 0;
    while ((word.load(std::memory_order_acquire) & kWordResumed) == 0)
    {
        if (host)
        {
            // Nested wait: run the hosted scheduler's work while waiting.
            if (host->Pump(64, Priority::Normal, 0, false).ran != 0)
                continue;
        }
        if (++spins < kThreadSpinIterations)
        {
            CpuRelax();
            continue;
        }
        if (host)
        {
            host->RegisterSleeper(parker);
            host->StoreLoadBarrier();
            if (!host->HasQueuedWork(Priority::Normal))
                SleepOnWord(word, kWordResumed | kWordWork);
            host->UnregisterSleeper(parker);
        }
        else
        {
            SleepOnWord(word, kWordResumed);
        }
    }
    return timed ? SettleTimer(entry, node) : true;
}
} // namespace TC::detail
