#pragma once
// ManualResetEvent: a flag that, once set, lets every waiter pass until it is reset.

#include <TC/Synchronization/Waitable.h>

#include <atomic>

namespace TC::Synchronization
{
// Any number of waiters (tasks, converted threads, coroutines). Set opens it and resumes every
// waiter suspended at that moment; waiters arriving while it is set pass at once; Reset closes
// it. A waiter resumed by a Set returns even if a Reset followed before it ran.
//
// Destruction: when no waiter is suspended and no Set is running. The task or thread that
// constructed it is resumed last by Set, so it may destroy the event when its Wait returns if no
// other Set can be running then.
class ManualResetEvent : public Waitable<SuspensionKind::Multiple, ManualResetEvent>
{
public:
    explicit ManualResetEvent(bool initiallySet = false) noexcept : set_(initiallySet) {}

    // Opens the event and resumes every waiter suspended now. Any thread, also a callback.
    // Cost: one seq_cst store and two loads when nobody waits.
    void Set() noexcept
    {
        set_.store(true); // seq_cst: the state change the waiters' re-check pairs with
        if (IsSuspendedAfterSeqCstChange())
            Resume();
    }

    // Closes the event; later waiters suspend. Any thread.
    void Reset() noexcept { set_.store(false); }

    bool IsSet() const noexcept { return set_.load(); }

    // Waitable: true while set (consumes nothing).
    bool TryWait() const noexcept { return set_.load(); }

private:
    friend class Waitable<SuspensionKind::Multiple, ManualResetEvent>;
    void Resume() noexcept { SuspendableBase<SuspensionKind::Multiple>::Resume(); }

    std::atomic<bool> set_;
};
} // namespace TC::Synchronization
