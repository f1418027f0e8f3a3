#pragma once
// AutoResetEvent: a signal that lets exactly one waiter pass per Set.

#include <TC/Synchronization/Waitable.h>

#include <atomic>

namespace TC::Synchronization
{
// Any number of waiters (tasks, converted threads, coroutines). Set resumes one suspended
// waiter (the newest; the constructing task or thread only when nobody else waits), or, if none
// waits, leaves the event signaled so that the next Wait passes at once and clears it. Sets do
// not accumulate: two Sets with nobody waiting let one waiter pass.
//
// Destruction: when no waiter is suspended and no Set is running. Its creator (the task or
// converted thread that constructed it), resumed last, may destroy it as soon as its own Wait
// returned, provided every other waiter was suspended on it, or had returned, before the Set that
// let the creator pass, and no other Set can still be running: the creator's Wait waits out
// what the Set that resumed it still does there, and every other waiter -- task, thread or
// coroutine -- touches nothing of the event once resumed.
//
// Wait(), Wait(timeout), co_await ev, co_await ev.WaitAsync(timeout): from Waitable.
/// - Wait(timeout) returns true with the signal taken, false on timeout (no limit without
///   EnableTimers). A signal is never lost to a timeout: a Set that reaches a timed waiter
///   first makes its wait return true, else it goes to another waiter or stays pending.
/// - A timed waiter counts as waiting until its Wait returned (see SuspendableBase).
class AutoResetEvent : public Waitable<SuspensionKind::Multiple, AutoResetEvent>
{
public:
    explicit AutoResetEvent(bool initiallySet = false) noexcept : signaled_(initiallySet) {}

    // Lets one waiter pass: resumes one suspended waiter or leaves the event signaled. Any
    // thread, also a callback. Never touches the object after the ResumeTask it makes.
    void Set() noexcept
    {
        // A waiter already suspended takes the signal directly: the pop's two RMWs instead of
        // five through the flag. Nothing this Set wrote must precede the peeks (it wrote nothing
        // yet), so no fence; a waiter they miss, or one another resumer takes first, is handled
        // by the flag below as before.
        if (MayHaveWaiter() && ResumeNextUnordered())
            return;
        for (;;)
        {
            // seq_cst: pairs with the waiter's publish-then-re-check. An exchange, not a store:
            // as an RMW it continues the release sequence of a Set already pending, so the
            // waiter that consumes the coalesced signal sees what both setters wrote (a store
            // would cut the earlier one off in the C++ model; on x86 both are one xchg).
            (void)signaled_.exchange(true);
            if (!IsSuspendedAfterSeqCstChange()) // seq_cst loads, no fence: see SuspendableBase
                return; // a waiter that publishes later finds the signal in its re-check
            if (!signaled_.exchange(false))
                return; // a waiter (or another Set) took the signal and resumes someone
            if (ResumeNext())
                return;
            // The waiter we saw was resumed by somebody else meanwhile: put the signal back.
        }
    }

    // Clears a pending signal. Any thread.
    void Reset() noexcept { signaled_.store(false); }

    // Waitable: takes the signal if it is there.
    bool TryWait() noexcept
    {
        // No peek before the exchange: on x86 a load of the word that a Set on this thread has
        // just exchanged waits for that locked store (an uncontended Set+Wait took 12.6 ns with
        // the peek, 8.3 without); a waiter that finds no signal goes on to suspend anyway.
        return signaled_.exchange(false);
    }

private:
    friend class Waitable<SuspensionKind::Multiple, AutoResetEvent>;

    // Waitable: the re-check after publishing. It peeks before the RMW, since a waiter that gets
    // here usually finds no signal (skipping the peek made a ping-pong round trip 5% slower). The
    // peek is seq_cst: after the creator slot's exchange, nothing else orders it before the
    // Set it pairs with (a plain load on x86).
    bool Recheck() noexcept { return signaled_.load() && TryWait(); }

    // A waiter's re-check took the signal: hand it to one suspended waiter (maybe that same
    // one); if another resumer emptied the stack meanwhile, the signal goes back.
    void Resume() noexcept
    {
        if (!ResumeNext())
            Set();
    }

    std::atomic<bool> signaled_;
};
} // namespace TC::Synchronization
