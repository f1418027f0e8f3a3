#pragma once
// Gate: a callback that any number of waiters -- tasks, converted threads, coroutines -- suspend
// on until a test opens it; counts them as they are published.

#include <TC/Core.h>

#include <atomic>

namespace TestSupport
{
struct Gate final : TC::ISuspendCallback
{
    TC::ConcurrentStack<TC::SuspendedTaskEntry> waiters;
    std::atomic<int> suspended{0};
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiters.Push(task.Entry());
        ++suspended;
    }
    // Resumes everyone published so far; returns how many.
    int OpenAll()
    {
        int count = 0;
        for (TC::SuspendedTaskEntry* entry = waiters.PopAll(); entry;)
        {
            TC::SuspendedTaskEntry* next = entry->next; // read before the handle goes back
            TC::ResumeTask(TC::SuspendedTask(entry));
            entry = next;
            ++count;
        }
        return count;
    }
};
} // namespace TestSupport
