#pragma once
// ManualResetEvent: a gate that, once set, lets every waiter pass until it is reset.

#include <TC/Duration.h>
#include <TC/Synchronization/detail/OneWordEvent.h>

namespace TC::Synchronization
{
// Any number of waiters (tasks, converted threads, coroutines). Set opens the event and resumes
// every waiter suspended at that moment, newest first; waiters arriving while it is set pass at
// once; Reset closes it. A waiter resumed by a Set returns even if a Reset followed before it
// ran, and a Set resumes only the waiters that suspended before it opened the event: one that
// suspends after a later Reset waits for the next Set.
//
// State and the chain of waiters share one atomic word (detail::OneWordEvent): a waiter
// publishes itself and checks the state with one compare-exchange; Set opens the event and
// claims every waiter with one exchange and then touches only the waiters' entries. Destruction:
// by any waiter as soon as its Wait returned, if no other Set is running and nobody else is
// about to wait; by anyone once no waiter is suspended and no Set is running. A timed waiter
// counts as waiting until its Wait returned. Cost: a Set+Wait pair that does not suspend is one
// RMW (Set's compare-exchange; Wait is a load); one that suspends adds one for publishing. No
// limit on the number of waiters: the chain runs through their SuspendedTaskEntry links, nothing
// is allocated.
/// - Wait(timeout) returns true if a Set let it pass, false on timeout; a timeout unlinks the
///   waiter from the chain (a walk of the waiters under a bit of the word, during which Set
///   and new waiters spin), and a Set that claimed it first wins: the wait then returns true.
class ManualResetEvent : public detail::OneWordEvent<true>
{
public:
    explicit ManualResetEvent(bool initiallySet = false) noexcept : OneWordEvent(initiallySet) {}

    // Set(): described above. Any thread, also a callback; never blocks.
    using OneWordEvent::Set;
    // Reset(): closes the event if it is set; suspended waiters stay suspended.
    using OneWordEvent::Reset;
    // IsSet(), IsSuspended(): snapshots of the word.
    using OneWordEvent::IsSet;
    using OneWordEvent::IsSuspended;
    // TryWait(): true while set (consumes nothing); never suspends.
    using OneWordEvent::TryWait;

    // Wait(): returns at once if set; otherwise suspends until a Set. From a task or a converted
    // thread (not from a callback, not from a worker thread outside a task).
    void Wait() { OneWordEvent::Wait(); }
    // Wait(timeout): as Wait, or false once `timeout` passed (no limit without EnableTimers).
    bool Wait(Duration timeout) { return OneWordEvent::Wait(timeout); }

    // co_await ev, co_await ev.WaitAsync(), co_await ev.WaitAsync(timeout) (yields false on
    // timeout): the coroutine forms; the coroutine continues on the executor that was current
    // when it suspended.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
