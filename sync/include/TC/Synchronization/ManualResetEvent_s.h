#pragma once
// ManualResetEvent_s: a flag that, once set, lets its one waiter pass until reset.

#include <TC/Synchronization/detail/OneWordEvent.h>

namespace TC::Synchronization
{
// Set opens the event and resumes the waiter if one is suspended; while set, Wait passes at
// once; Reset closes it.
// At most one waiter at a time (task, converted thread or coroutine; checked mode fails a
// second); Set may be called from any thread and any number of times.
//
// State and waiter share one atomic word, so publishing the waiter and checking the state is
// one compare-exchange, and neither Set nor the waiter touches the object after the RMW that
// hands the waiter over. Destruction: by the waiter as soon as its Wait returned (the usual
// "signal me, then I free the event" pattern), or by anyone once no waiter is suspended and no
// Set is running. Cost: a Set+Wait pair that does not suspend is one RMW (Set's exchange; Wait
// is a load); one that suspends adds one for publishing.
class ManualResetEvent_s : public detail::OneWordEvent<>
{
public:
    explicit ManualResetEvent_s(bool initiallySet = false) noexcept : OneWordEvent(initiallySet) {}

    // Set(): described above. Any thread, also a callback; never blocks.
    using OneWordEvent::Set;
    // Reset(): clears the event if set; a suspended waiter stays suspended.
    using OneWordEvent::IsSet;
    using OneWordEvent::IsSuspended;
    using OneWordEvent::Reset;
    // TryWait(): passes if set without suspending; true if it passed.
    using OneWordEvent::TryWait;

    // Wait(): returns at once if set; otherwise suspends until Set. From a task or a converted
    // thread. Wait(timeout): the same, but returns false if no Set came within the timeout
    // (unlimited without EnableTimers); true when it passed.
    using OneWordEvent::Wait;

    // co_await ev, co_await ev.WaitAsync(), co_await ev.WaitAsync(timeout) (yields false on
    // timeout): the coroutine forms; the coroutine continues on the executor that was current
    // when it suspended.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
