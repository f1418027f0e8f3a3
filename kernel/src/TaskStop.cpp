// Stop tokens of stackful tasks and converted threads (TaskStop.h). The waits that use them are
// in Suspend.cpp and ThreadWaiter.cpp; the stop itself fires the wait's timer node (Timers.cpp).

#include "SchedulerCore.h"
#include "Task.h"
#include "ThreadState.h"

#include <TC/Checked.h>
#include <TC/TaskStop.h>

namespace TC
{
using namespace detail;

namespace
{
// Where the calling waiter keeps its token pointer: the task's, or the thread's outside a task.
const std::stop_token*& CurrentTokenSlot(TaskIdentity*& owner) noexcept
{
    ThreadState& thread = CurrentThread();
    if (Task* task = thread.worker ? thread.worker->current : nullptr)
    {
        owner = task;
        return task->stopToken;
    }
    owner = &thread;
    return thread.stopToken;
}
} // namespace

std::stop_token GetStopToken() noexcept
{
    TaskIdentity* owner = nullptr;
    const std::stop_token* token = CurrentTokenSlot(owner);
    return token ? *token : std::stop_token();
}

bool StopRequested() noexcept
{
    TaskIdentity* owner = nullptr;
    const std::stop_token* token = CurrentTokenSlot(owner);
    return token && token->stop_requested();
}

StopScope::StopScope(std::stop_token token) noexcept : token_(std::move(token))
{
    const ThreadState& thread = CurrentThread();
    TC_CHECK(!thread.worker || thread.worker->current, "StopScope outside a task",
             "a StopScope was made on a scheduler worker outside any task (in a coroutine or "
             "callback it runs); coroutines take Strands stop tokens instead");
    (void)thread;
    const std::stop_token*& slot = CurrentTokenSlot(owner_);
    previous_ = slot;
    slot = &token_;
}

StopScope::~StopScope()
{
    TaskIdentity* owner = nullptr;
    const std::stop_token*& slot = CurrentTokenSlot(owner);
    TC_CHECK(owner == owner_ && slot == &token_, "StopScope left on another waiter",
             "a StopScope was destroyed on another task or thread than the one that made it, or "
             "before a StopScope made after it; destroy scopes where they were made, innermost "
             "first");
    if (owner == owner_ && slot == &token_)
        slot = previous_;
}
} // namespace TC
