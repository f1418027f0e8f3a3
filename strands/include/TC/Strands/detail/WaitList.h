#pragma once
// detail::WaitList: threads and stackful tasks waiting, through the kernel's suspend protocol,
// for a condition guarded by the caller's mutex (a strand's or a registry's).

#include <TC/ISuspendCallback.h>
#include <TC/Scheduler.h>
#include <TC/Suspend.h>
#include <TC/SuspendedTask.h>

#include <mutex>
#include <thread>
#include <typeinfo>

namespace TC::detail
{
class WaitList
{
public:
    // `owner` names what the waiters wait for in diagnostics ("TC::Strands::Strand", ...).
    explicit WaitList(const char* owner) noexcept : owner_(owner) {}

    // Returns once pred() holds, re-checked under `lock` (held on entry and on return). A
    // stackful task or a converted thread waits through SuspendTask (a host thread keeps
    // pumping its scheduler meanwhile); a scheduler thread outside any task cannot, so it
    // yields in a loop -- what it waits for runs on another thread and ends within one task.
    template <class Lock, class Pred>
    void WaitUntil(std::unique_lock<Lock>& lock, Pred pred)
    {
        while (!pred())
        {
            if (IsInsideTask() || Scheduler::Current() == nullptr)
            {
                Waiter<Lock, Pred> waiter(*this, lock, pred);
                lock.unlock();
                SuspendTask(&waiter);
            }
            else
            {
                lock.unlock();
                std::this_thread::yield();
            }
            lock.lock();
        }
    }

    // Resumes every waiter; each re-checks its condition. Call under the mutex.
    void WakeAllLocked() noexcept
    {
        SuspendedTaskEntry* entry = top_;
        top_ = nullptr;
        while (entry)
        {
            SuspendedTaskEntry* next = entry->next; // the waiter may be gone once resumed
            ResumeTask(SuspendedTask(entry));
            entry = next;
        }
    }

    bool EmptyLocked() const noexcept { return top_ == nullptr; }

private:
    template <class Lock, class Pred>
    class Waiter final : public ISuspendCallback
    {
    public:
        Waiter(WaitList& list, std::unique_lock<Lock>& lock, Pred& pred) noexcept
            : list_(list), mutex_(*lock.mutex()), pred_(pred)
        {
        }
        void OnSuspended(SuspendedTask task) noexcept override
        {
            std::unique_lock<Lock> lock(mutex_);
            if (pred_())
            {
                lock.unlock();
                ResumeTask(task); // it held before we published: no wake would come
                return;
            }
            task.Entry()->next = list_.top_;
            list_.top_ = task.Entry();
        }
        WaitTarget WaitedOn() const noexcept override { return {&list_, &typeid(WaitList), list_.owner_}; }

    private:
        WaitList& list_;
        Lock& mutex_;
        Pred& pred_;
    };

    SuspendedTaskEntry* top_ = nullptr;
    const char* owner_;
};
} // namespace TC::detail
