// TC::DumpTasks and the task lines of a scheduler's hang report: the registry of task blocks
// (TaskRegistry.h) read without stopping anything.

#include "Diagnostics.h"
#include "ParkedCoroutines.h"

#include "Sanitizers.h"
#include "SchedulerCore.h"
#include "Task.h"
#include "TaskRegistry.h"
#include "ThreadState.h"
#include "Timers.h"

#include <TC/ISuspendCallback.h>
#include <TC/SuspendAsync.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <pthread.h>
#include <string>

// The gdb extension, as an inline script of .debug_gdb_scripts (cmake/TCGdbExtension.cmake): in
// this object because every program that makes a scheduler links it (the hang report).
#if defined(__ELF__) && defined(__x86_64__) && defined(TC_GDB_SCRIPT)
asm(".pushsection \".debug_gdb_scripts\", \"MS\", @progbits, 1\n"
    ".byte 4\n" // an inline Python script: its name on the first line, then its text
    ".ascii \"concurrent_tasks.py\\n\"\n"
    ".incbin \"" TC_GDB_SCRIPT "\"\n"
    ".byte 0\n"
    ".popsection\n");
#endif

#if TC_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace TC::detail
{
namespace
{
// The dump reads what running tasks write without synchronizing with them, by design (a
// snapshot that costs the tasks nothing): ThreadSanitizer is told not to watch these reads.
struct IgnoreRacyReads
{
#if TC_TSAN
    IgnoreRacyReads() noexcept { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
    ~IgnoreRacyReads() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#else
    IgnoreRacyReads() noexcept = default;
#endif
    IgnoreRacyReads(const IgnoreRacyReads&) = delete;
    IgnoreRacyReads& operator=(const IgnoreRacyReads&) = delete;
};

std::string Seconds(std::int64_t nanoseconds)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(nanoseconds) / 1e9);
    return text;
}

std::string Address(const void* address)
{
    char text[32];
    std::snprintf(text, sizeof text, "%p", address);
    return text;
}

// "waits on <name> at <address>", from what checked mode recorded at suspension, else from the
// callback now.
std::string WaitsOn(const SuspendedTaskEntry& entry)
{
    WaitTarget target = RecordedWaitTarget(entry);
    if (target.type == nullptr)
    {
        target = {};
        if (const ISuspendCallback* callback = entry.callback_)
            target = callback->WaitedOn();
    }
    return "waits on " + NameOf(target) + " at " + Address(target.object);
}

// How long the entry has been suspended (" for N s"), when its suspension was stamped.
std::string SuspendedFor(const SuspendedTaskEntry& entry, std::int64_t now)
{
    if (entry.suspendedAt_ == 0)
        return {};
    // The coarse clock it was stamped with may run a little ahead of the steady clock.
    return " for " + Seconds(std::max<std::int64_t>(now - entry.suspendedAt_, 0));
}

// The worker of any core whose current task is `task`, or nullptr.
const Worker* RunningOn(const Task* task)
{
    for (CoreRecord* core = coreRegistry; core; core = core->next)
        for (unsigned i = 0; i < core->workerCount; ++i)
            if (core->workers[i]->current == task)
                return core->workers[i];
    return nullptr;
}

void DescribeTask(std::ostream& out, const BlockRecord& block, std::int64_t now)
{
    const Task* task = block.task;
    const TaskRunState state = ReadRunState(*task);
    if (state == TaskRunState::Free)
        return;
    std::string line = "  task " + std::to_string(block.id) + " '" + task->name + "' ";
    if (const Worker* worker = RunningOn(task); worker && state != TaskRunState::Finished)
    {
        if (worker->core->HasWorkerThreads())
            line += "running on worker " + std::to_string(worker->index);
        else
            line += "running on the host thread";
    }
    else
        switch (state)
        {
        case TaskRunState::Queued:
        case TaskRunState::Ready:
            line += "ready";
            break;
        case TaskRunState::Suspended:
            line += "suspended" + SuspendedFor(task->entry, now) + ", " + WaitsOn(task->entry);
            break;
        case TaskRunState::SuspendedTimed:
        {
            line += "suspended" + SuspendedFor(task->entry, now);
            if (const TimerNode* timer = task->entry.timer_)
            {
                const std::int64_t left = (timer->deadline - now) / 1000000;
                line += " until a deadline in " + std::to_string(left) + " ms";
            }
            line += ", " + WaitsOn(task->entry);
            break;
        }
        case TaskRunState::Finished:
            line += "finished, not joined";
            break;
        case TaskRunState::Free:
            break;
        }
    out << line << '\n';
}

// The tasks whose scheduler is `core` (a task that moved is listed where it is now).
std::size_t DescribeTasksOf(std::ostream& out, const SchedulerCore* core, std::int64_t now)
{
    std::size_t listed = 0;
    for (CoreRecord* record = coreRegistry; record; record = record->next)
    {
        std::lock_guard guard(record->lock);
        for (const BlockRecord* block = record->blocks; block; block = block->next)
        {
            const TaskRunState state = ReadRunState(*block->task);
            if (state == TaskRunState::Free || block->task->scheduler != core)
                continue;
            DescribeTask(out, *block, now);
            ++listed;
        }
    }
    return listed;
}

void DescribeCore(std::ostream& out, const CoreRecord& record, std::int64_t now)
{
    out << "scheduler '" << record.name << "' ("
        << (record.hasWorkerThreads ? std::to_string(record.workerCount) + " worker(s)" : "host-pumped")
        << (record.core->stopping.load(std::memory_order_relaxed) ? ", stopping" : "") << "):\n";
    if (DescribeTasksOf(out, record.core, now) == 0)
        out << "  no live task\n";
}

// The converted threads waiting now, with their OS thread id and name (every build; under
// RegistryLock()).
void DescribeThreads(std::ostream& out, std::int64_t now)
{
    std::string lines;
    for (const ThreadState* thread = threadRegistry; thread; thread = thread->nextListed)
    {
        const SuspendedTaskEntry* entry = thread->waiting;
        if (!entry)
            continue;
        char name[32] = "";
        if (pthread_getname_np(static_cast<pthread_t>(thread->handle), name, sizeof name) != 0)
            name[0] = '\0';
        lines += "  thread " + std::to_string(thread->osThreadId) + " '" + name + "' suspended" +
                 SuspendedFor(*entry, now) + ", " + WaitsOn(*entry) + '\n';
    }
    if (!lines.empty())
        out << "converted threads waiting:\n" << lines;
}

// The coroutines suspended now, by frame address: those of SuspendTaskAsync from checked mode's
// registry in checked builds, the rest from the list of parked coroutines.
void DescribeCoroutines(std::ostream& out, std::int64_t now)
{
    std::string lines;
    const auto describe = [&](const SuspendedTaskEntry& entry) {
        if (entry.kind_ != WaiterKind::Coroutine)
            return;
        lines += "  coroutine " + Address(entry.owner_) + " suspended" + SuspendedFor(entry, now) + ", " +
                 WaitsOn(entry) + '\n';
    };
    ForEachSuspended(describe); // empty outside checked builds
    ForEachParkedCoroutine(describe);
    if (!lines.empty())
        out << "coroutines suspended:\n" << lines;
}
} // namespace

void DumpTasksOf(std::ostream& out, const SchedulerCore& core)
{
    [[maybe_unused]] const IgnoreRacyReads ignore;
    const std::int64_t now = SteadyNowNanoseconds();
    std::lock_guard guard(RegistryLock());
    if (DescribeTasksOf(out, &core, now) == 0)
        out << "  no live task\n";
}
} // namespace TC::detail

namespace TC
{
void DumpTasks(std::ostream& out)
{
    using namespace detail;
    [[maybe_unused]] const IgnoreRacyReads ignore;
    const std::int64_t now = SteadyNowNanoseconds();
    {
        std::lock_guard guard(RegistryLock());
        for (CoreRecord* record = coreRegistry; record; record = record->next)
            DescribeCore(out, *record, now);
        DescribeThreads(out, now);
    }
    DescribeCoroutines(out, now);
    out.flush();
}
} // namespace TC
