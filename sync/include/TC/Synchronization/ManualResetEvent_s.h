#pragma once
// ManualResetEvent_s: a flag that, once set, lets its one waiter pass until reset.

#include <TC/Synchronization/detail/OneWordEvent.h>

namespace TC::Synchronization
{
// Set opens it and resumes the waiter; while set Wait passes; Reset closes it.
//   ManualResetEvent_s done;  done.Set();  /* waiter: */ done.Wait();
/// - One waiter at a time (checked mode fails a second); Set: any thread, any number of times.
/// - Destruction: by the waiter once its Wait returned; by anyone once no waiter is suspended
///   and no Set runs. A passing Set+Wait is one RMW.
class ManualResetEvent_s : public detail::OneWordEvent<>
{
public:
    explicit ManualResetEvent_s(bool initiallySet = false) noexcept : OneWordEvent(initiallySet) {}

    // Set(): any thread or callback; never blocks.
    using OneWordEvent::Set;
    // Reset(): clears it; a suspended waiter stays suspended.
    using OneWordEvent::IsSet;
    using OneWordEvent::IsSuspended;
    using OneWordEvent::Reset;
    // TryWait(): true if set; never suspends.
    using OneWordEvent::TryWait;

    // Wait(): else suspends until Set (task or converted thread). Wait(timeout): false if no
    // Set came in time (no limit without EnableTimers).
    using OneWordEvent::Wait;

    // co_await forms; resume on the executor current at suspension.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
