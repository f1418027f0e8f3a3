#pragma once
// AutoResetEvent: a signal that lets exactly one waiter pass per Set.
// Waiters: tasks, converted threads, coroutines; Sets do not accumulate.

#include <TC/Synchronization/Waitable.h>

#include <atomic>

namespace TC::Synchronization
{
/// ```cpp
/// AutoResetEvent ready;
/// producer: Publish(item); ready.Set();   consumer: ready.Wait(); Take();
/// ```
/// - Set resumes one waiter (the newest; the creator only when alone), or leaves the signal for
///   the next Wait, which takes it. Two Sets with nobody waiting let one waiter pass.
/// - Wait(timeout): true with the signal, false on timeout (no limit without EnableTimers); a
///   signal is never lost to a timeout. A timed waiter counts as waiting until it returned.
/// - Destruction: once no waiter is suspended and no Set runs; or by the creator (constructing
///   task or thread) once its Wait returned, if every other waiter had suspended or returned
///   before the Set that let it pass and no other Set can still run.
/// - Wait(), Wait(timeout), co_await ev, co_await ev.WaitAsync(timeout): from Waitable.
class AutoResetEvent : public Waitable<SuspensionKind::Multiple, AutoResetEvent>
{
public:
    explicit AutoResetEvent(bool initiallySet = false) noexcept : signaled_(initiallySet) {}

    // Any thread or callback; no access after ResumeTask.
    void Set() noexcept
    {
        // A suspended waiter takes the signal directly (see design notes).
        if (MayHaveWaiter() && ResumeNextUnordered())
            return;
        for (;;)
        {
            // seq_cst exchange: pairs with the waiter's publish-then-re-check.
            (void)signaled_.exchange(true);
            if (!IsSuspendedAfterSeqCstChange())
                return; // a later waiter finds the signal in its re-check
            if (!signaled_.exchange(false))
                return; // someone else took the signal and resumes a waiter
            if (ResumeNext())
                return;
            // That waiter was resumed by somebody else: put the signal back.
        }
    }

    // Clears a pending signal. Any thread.
    void Reset() noexcept { signaled_.store(false); }

    // Waitable: takes the signal if present.
    bool TryWait() noexcept
    {
        return signaled_.exchange(false);
    }

private:
    friend class Waitable<SuspensionKind::Multiple, AutoResetEvent>;

    // Waitable: the re-check after publishing; seq_cst peek, then take.
    bool Recheck() noexcept { return signaled_.load() && TryWait(); }

    // A re-check took the signal: hand it to a suspended waiter, or put it back.
    void Resume() noexcept
    {
        if (!ResumeNext())
            Set();
    }

    std::atomic<bool> signaled_;
};
} // namespace TC::Synchronization
