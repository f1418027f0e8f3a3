#pragma once
// ManualResetEvent: a gate that, once set, lets every waiter pass until it is reset.
// Waiters: tasks, converted threads, coroutines; any number, nothing allocated.

#include <TC/Duration.h>
#include <TC/Synchronization/detail/OneWordEvent.h>

namespace TC::Synchronization
{
/// ```cpp
/// ManualResetEvent loaded;
/// loader: Load(); loaded.Set();   any reader: loaded.Wait(); Use();
/// ```
/// - Set resumes exactly the waiters suspended when it opened the event, newest first (they
///   return even if a Reset followed); later waiters pass until Reset.
/// - Wait(timeout): false on timeout, true if a Set claimed the waiter first. A timeout unlinks
///   the waiter (Set and new waiters spin meanwhile).
/// - Destruction: by any waiter once its Wait returned, if no other Set runs and nobody else is
///   about to wait; by anyone once no waiter is suspended and no Set runs. A timed waiter counts
///   as waiting until its Wait returned.
class ManualResetEvent : public detail::OneWordEvent<true>
{
public:
    explicit ManualResetEvent(bool initiallySet = false) noexcept : OneWordEvent(initiallySet) {}

    // Set(): opens and resumes; any thread or callback; never blocks.
    using OneWordEvent::Set;
    // Reset(): closes the event; suspended waiters stay suspended.
    using OneWordEvent::Reset;
    // IsSet(), IsSuspended(): snapshots.
    using OneWordEvent::IsSet;
    using OneWordEvent::IsSuspended;
    // TryWait(): true while set (consumes nothing); never suspends.
    using OneWordEvent::TryWait;

    // Returns at once if set, else suspends until a Set. Task or converted thread only.
    void Wait() { OneWordEvent::Wait(); }
    // As Wait, or false once `timeout` passed (no limit without EnableTimers).
    bool Wait(Duration timeout) { return OneWordEvent::Wait(timeout); }

    // co_await ev / ev.WaitAsync() / ev.WaitAsync(timeout) (false on timeout); resumes on the
    // executor current when it suspended.
    using OneWordEvent::WaitAsync;
    using OneWordEvent::operator co_await;
};
} // namespace TC::Synchronization
