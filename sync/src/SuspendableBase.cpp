// SuspendableBase: who counts as the creator of a Multiple object.

#include <TC/Synchronization/SuspendableBase.h>

#include <TC/Scheduler.h>

namespace TC::Synchronization::detail
{
TaskHandle CreatorHandle() noexcept
{
    if (IsInsideTask())
        return GetCurrentTask();
    // A worker thread, or a host while it pumps, outside any task runs coroutines and
    // callbacks: none of them is the thread itself waiting, so nobody is the creator there.
    if (Scheduler::Current() != nullptr)
        return {};
    return GetCurrentTask(); // a plain or converted thread (converted now if it was not)
}
} // namespace TC::Synchronization::detail
