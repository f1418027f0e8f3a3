#pragma once
// Suspendable<Kind, T>: SuspendableBase whose suspend callback re-checks through T::TryResume().

#include <TC/Synchronization/SuspendableBase.h>

namespace TC::Synchronization
{
// For primitives whose waiters loop ("while the state is wrong, Suspend()"): after publishing,
// the callback calls T::TryResume() to resume waiters if the state changed meanwhile.
/// - TryResume runs outside any task, maybe after another resume: it claims waiters only via
///   ResumeNext/Resume. Checked at compile time.
/// - Lifetime: as SuspendableBase; a Multiple one only once every wait returned and no call runs.
template <SuspensionKind Kind, class T>
class Suspendable : public SuspendableBase<Kind>
{
protected:
    Suspendable() noexcept
    {
        static_assert(requires(T& t) { t.TryResume(); },
                      "Suspendable<Kind, T>: T must provide `void TryResume()`, the re-check after "
                      "a waiter was published (public, or reachable by Suspendable as a friend)");
    }

private:
    void OnPublished() noexcept final { static_cast<T*>(this)->TryResume(); }
};
} // namespace TC::Synchronization
