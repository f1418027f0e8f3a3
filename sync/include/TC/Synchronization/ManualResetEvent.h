#pragma once
// ManualResetEvent: a gate that, once set, lets every waiter pass until it is reset.

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
// about to wait; by anyone once no waiter is suspended and no Set is running. No timed wait: a
// waiter that timed out would have to unlink itself from the middle of the chain (the _s variant
// has one). Cost: a Set+Wait pair that does not suspend is one RMW (Set's exchange; Wait is a
// load); one that suspends adds one for publishing. No limit on the number of waiters: the
// chain runs through their SuspendedTaskEntry links, nothing is allocated.
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

    // co_await ev, co_await ev.WaitAsync(): the coroutine form; the coroutine continues on the
    // executor that was current when it suspended.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
