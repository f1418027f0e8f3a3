// The public API: TC::Scheduler, JoinHandle, YieldTask, MoveCurrentTaskTo, ShutdownRequested.

#include "SchedulerInternals.h"
#include "StackOverflow.h"

#include "Resume.h"

#include <TC/Suspend.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <thread>
#include <typeinfo>
#include <utility>

namespace TC
{
using namespace detail;

Scheduler::Scheduler(SchedulerOptions options)
    : core_(std::make_unique<SchedulerCore>(this, std::move(options)))
{
    // RunFor's checks read the deadline clock: its one-time set-up (a read of the kernel's
    // clock source) happens here, not in a host's first frame.
    DeadlineNowNanoseconds();
    InstallStackOverflowReport(); // <TC/StackAllocator.h>: SetStackOverflowReport
}

Scheduler::Scheduler(unsigned workerCount)
    : Scheduler([workerCount] {
          SchedulerOptions options;
          options.workerCount = workerCount;
          return options;
      }())
{
}

Scheduler::~Scheduler()
{
    try
    {
        core_->Stop("~Scheduler");
    }
    catch (const std::exception& error)
    {
        // Called from its own work (or a pumped coroutine threw): it cannot go on, and a
        // destructor cannot throw; the message names the rule, which std::terminate may not.
        std::fprintf(stderr, "TC: %s\n", error.what());
        std::abort();
    }
    // The core holds one count for this object: JoinHandles still holding finished tasks keep it
    // alive, and whoever drops the last count (here, or the last handle's release) deletes it.
    SchedulerCore* core = core_.release();
    if (core->Orphan())
        delete core;
}

namespace
{
// A Priority value past the last level: std::invalid_argument naming the call.
void CheckPriority(Priority priority, const char* call)
{
    if (PriorityIndex(priority) >= kPriorityCount) [[unlikely]]
        throw std::invalid_argument(std::string("TC::") + call + ": Priority " +
                                    std::to_string(PriorityIndex(priority)) +
                                    " is not a level (Critical, High, Normal, Low)");
}

// TaskOptions::worker past the last worker (the host counts as one): std::out_of_range.
void CheckWorker(const TaskOptions& options, const SchedulerCore& core, const char* call)
{
    const unsigned count = std::max(core.options.workerCount, 1u);
    if (options.worker != kAnyWorker && options.worker >= count) [[unlikely]]
        throw std::out_of_range(std::string("TC::") + call + ": TaskOptions::worker " +
                                std::to_string(options.worker) + " is out of range: '" +
                                core.options.name + "' has " + std::to_string(count) +
                                (core.options.workerCount ? " worker(s)" : " host (index 0)"));
}
} // namespace

Task* Scheduler::AllocateTask(const TaskOptions& options, const TaskBody& body, void*& slot)
{
    CheckPriority(options.priority, "Scheduler::Start");
    CheckWorker(options, *core_, "Scheduler::Start");
    return core_->AllocateTask(options, body, slot);
}

void Scheduler::FreeUnstartedTask(Task* task) noexcept
{
    core_->FreeUnstartedTask(task);
}

Task* Scheduler::LaunchTask(Task* task)
{
    core_->Launch(task);
    return task;
}

void Scheduler::StartBulkTasks(std::size_t count, const TaskOptions& options, const TaskBody& body,
                               BulkConstruct construct, const void* source, JoinHandle* handles)
{
    CheckPriority(options.priority, "Scheduler::StartBulk");
    CheckWorker(options, *core_, "Scheduler::StartBulk");
    if (count == 0)
        return;
    const std::unique_ptr<Task*[]> tasks(new Task*[count]);
    core_->StartBulk(count, options, body, construct, source, handles == nullptr, tasks.get());
    if (handles)
        for (std::size_t i = 0; i < count; ++i)
            handles[i].task_ = tasks[i];
}

void Scheduler::Submit(std::coroutine_handle<> handle)
{
    Submit(handle, Priority::Normal);
}

void Scheduler::Submit(ParkedWork work)
{
    Submit(work.handle, Priority::Normal);
}

void Scheduler::Submit(std::coroutine_handle<> handle, Priority priority)
{
    CheckPriority(priority, "Scheduler::Submit");
    core_->Enqueue(reinterpret_cast<std::uintptr_t>(handle.address()) | kCoroutineTag, priority,
                   Arrival::New);
}

PumpResult Scheduler::RunPending(std::size_t maxTasks, Priority lowest)
{
    CheckPriority(lowest, "Scheduler::RunPending");
    core_->CheckHostThread(false);
    return core_->Pump(maxTasks, lowest, 0, true);
}

PumpResult Scheduler::RunFor(Duration budget, Priority lowest)
{
    CheckPriority(lowest, "Scheduler::RunFor");
    core_->CheckHostThread(false);
    if (core_->QueuedApprox(&core_->HostWorker(), lowest) == 0)
    {
        core_->NoteHostQueues(lowest, 0);
        return PumpResult{0, 0, budget}; // an idle turn reads no clock
    }
    const std::int64_t now = SteadyNowNanoseconds();
    const std::int64_t deadline =
        budget.IsInfinite() ? INT64_MAX
                            : DeadlineAfter(now, std::max<std::int64_t>(budget.Nanoseconds(), 1));
    return core_->Pump(SIZE_MAX, lowest, deadline, false);
}

PumpResult Scheduler::RunUntilIdle(Priority lowest)
{
    CheckPriority(lowest, "Scheduler::RunUntilIdle");
    core_->CheckHostThread(false);
    return core_->Pump(SIZE_MAX, lowest, 0, false);
}

bool Scheduler::WaitForWork(Duration timeout)
{
    core_->CheckHostThread(false);
    Worker& worker = core_->HostWorker();
    if (core_->QueuedApprox(&worker, kLowestPriority) != 0)
        return true;
    if (core_->stopped.load(std::memory_order_acquire))
        return false; // no work can come any more
    const std::int64_t deadline =
        timeout.IsInfinite() ? INT64_MAX
                             : DeadlineAfter(SteadyNowNanoseconds(), timeout.Nanoseconds());
    for (;;)
    {
        core_->RegisterSleeper(worker.parker);
        core_->StoreLoadBarrier();
        if (!core_->HasQueuedWork(kLowestPriority))
        {
            const std::int64_t left = deadline - SteadyNowNanoseconds();
            if (left > 0)
                SleepOnWord(worker.word, kWordWork,
                            timeout.IsInfinite() ? Duration::Infinite() : Duration::FromNanoseconds(left));
        }
        core_->UnregisterSleeper(worker.parker);
        if (core_->HasQueuedWork(kLowestPriority))
            return true;
        if (SteadyNowNanoseconds() >= deadline)
            return false;
    }
}

void Scheduler::Stop()
{
    core_->Stop("Stop");
}

bool Scheduler::Stopped() const noexcept
{
    return core_->stopped.load(std::memory_order_acquire);
}

void Scheduler::RequestShutdown() noexcept
{
    core_->shutdownRequested.store(true, std::memory_order_release);
}

bool Scheduler::ShutdownRequested() const noexcept
{
    return core_->shutdownRequested.load(std::memory_order_acquire);
}

unsigned Scheduler::WorkerCount() const noexcept
{
    return core_->options.workerCount;
}

const std::string& Scheduler::Name() const noexcept
{
    return core_->options.name;
}

std::size_t Scheduler::LiveTasks() const noexcept
{
    return core_->Live();
}

std::size_t Scheduler::TrimStackPool() noexcept
{
    return core_->TrimStackPool();
}

Scheduler* Scheduler::Current() noexcept
{
    Worker* worker = CurrentThread().worker;
    return worker ? worker->core->owner : nullptr;
}

void JoinHandle::Join()
{
    if (!task_)
        throw std::logic_error("TC::JoinHandle::Join: the handle is empty (already joined, "
                               "detached or moved from)");
    Task* task = task_;
    if (task->join.load(std::memory_order_acquire) != kJoinFinished)
    {
        struct JoinCallback final : ISuspendCallback
        {
            Task* task;
            explicit JoinCallback(Task* t) : task(t) {}
            void OnSuspended(SuspendedTask waiter) noexcept override
            {
                std::uintptr_t expected = kJoinRunning;
                if (!task->join.compare_exchange_strong(
                        expected, reinterpret_cast<std::uintptr_t>(waiter.Entry()),
                        std::memory_order_acq_rel, std::memory_order_acquire))
                    ResumeTask(waiter); // finished in the meantime
            }
            WaitTarget WaitedOn() const noexcept override
            {
                return {task, &typeid(JoinHandle), "TC::JoinHandle::Join"};
            }
        } callback(task);
        SuspendTask(&callback);
    }
    // Finished: the block is ours to free (EndForJoiner).
    std::exception_ptr error = std::move(task->error);
    task_ = nullptr;
    task->scheduler->FreeTask(task);
    if (error)
        std::rethrow_exception(error);
}

void JoinHandle::Detach() noexcept
{
    Task* task = std::exchange(task_, nullptr);
    if (!task)
        return;
    std::uintptr_t expected = kJoinRunning;
    if (task->join.compare_exchange_strong(expected, kJoinDetached, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
        return; // the task frees its block when it ends (EndForJoiner)
    // Already finished: nobody will see what it threw, and the block is ours to free.
    if (task->error)
        DetachedTaskFailed(task);
    task->scheduler->FreeTask(task);
}

bool JoinHandle::IsFinished() const noexcept
{
    return task_ && task_->join.load(std::memory_order_acquire) == kJoinFinished;
}

void YieldTask()
{
    Task* task = CurrentTask();
    if (!task)
    {
        std::this_thread::yield();
        return;
    }
    // Queued again by the switch's other side (RunPostSwitch); the pick that the switch or the
    // worker's loop makes next passes over it while other work is ready (TryDequeue).
    SwitchAway(*CurrentThread().worker, task, PostSwitch::Requeue, task->scheduler);
}

void MoveCurrentTaskTo(Scheduler& target, Priority priority)
{
    CheckPriority(priority, "MoveCurrentTaskTo");
    Task* task = CurrentTask();
    if (!task)
        throw std::logic_error("TC::MoveCurrentTaskTo: called outside a task");
    SchedulerCore* destination = target.core_.get();
    if (destination == task->scheduler)
    {
        task->priority = priority;
        YieldTask();
        return;
    }
    if (task->pin != kAnyWorker)
        throw std::logic_error("TC::MoveCurrentTaskTo: a task pinned to a worker "
                               "(TaskOptions::worker) cannot move to another scheduler");
    // Admitted before anything changes hands (refused: the task stays where it is), and counted
    // until the switch's other side has queued it there (RunPostSwitch).
    destination->EnterFromOutside(Arrival::New, "MoveCurrentTaskTo");
    // The task now belongs to the destination: its live count and its queues. Its block and
    // its stack stay its home scheduler's (Task::home), and go back there when it ends; the
    // block's count keeps that scheduler's core alive until then.
    destination->startedElsewhere.fetch_add(1, std::memory_order_release);
    // Its block stays registered where it was allocated (DumpTasks lists it there): that core
    // pools and frees the block, so only its registry may link it.
    SchedulerCore* source = task->scheduler;
    task->scheduler = destination;
    task->priority = priority;
    source->endedElsewhere.fetch_add(1, std::memory_order_release);
    SwitchAway(*CurrentThread().worker, task, PostSwitch::Requeue, destination);
}

bool ShutdownRequested() noexcept
{
    Worker* worker = CurrentThread().worker;
    return worker && worker->core->shutdownRequested.load(std::memory_order_acquire);
}
} // namespace TC
