#pragma once
// ManualResetEvent_s: a flag that, once set, lets its one waiter pass until reset.

#include <TC/Synchronization/detail/OneWordEvent.h>

namespace TC::Synchronization
{
// Set opens it and resumes a suspended waiter; while set Wait passes; Reset closes it.
//   TC::Synchronization::ManualResetEvent_s done;  done.Set();  /* waiter: */ done.Wait();
/// - One waiter at a time (checked mode fails a second); Set: any thread, any number of times.
/// - State and waiter in one word: the waiter may destroy it as soon as its Wait returned, anyone
///   else once no waiter is suspended and no Set runs. A passing Set+Wait costs one RMW.
class ManualResetEvent_s : public detail::OneWordEvent<>
{
public:
    explicit ManualResetEvent_s(bool initiallySet = false) noexcept : OneWordEvent(initiallySet) {}

    // Set(): as above. Any thread, also a callback; never blocks.
    using OneWordEvent::Set;
    // Reset(): clears the event if set; a suspended waiter stays suspended.
    using OneWordEvent::IsSet;
    using OneWordEvent::IsSuspended;
    using OneWordEvent::Reset;
    // TryWait(): passes if set without suspending; true if it passed.
    using OneWordEvent::TryWait;

    // Wait(): passes if set, else suspends until Set (task or converted thread). Wait(timeout):
    // false if no Set came in time (unlimited without EnableTimers).
    using OneWordEvent::Wait;

    // co_await ev / ev.WaitAsync() / ev.WaitAsync(timeout) (false on timeout): continue on the
    // executor current at suspension.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
