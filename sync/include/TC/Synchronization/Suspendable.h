#pragma once
// Suspendable<Kind, T>: SuspendableBase whose suspend callback re-checks through T::TryResume().

#include <TC/Synchronization/SuspendableBase.h>

namespace TC::Synchronization
{
// For primitives whose waiters loop themselves ("while the state is wrong, Suspend()"): the
// suspend callback publishes the waiter and then calls T::TryResume(), the re-check, which
// resumes the waiter(s) if the state changed before the waiter became visible. TryResume runs on
// the suspending thread outside any task and may run after another thread already resumed the
// waiter, so it must claim waiters through ResumeNext/Resume and never assume one is there.
// T must make TryResume accessible (public, or befriend Suspendable); the constructor checks it
// at compile time. Lifetime: as SuspendableBase<Kind>, except that its waiters loop and read the
// state again after each resume, so a Multiple one may be destroyed only once every wait on it
// has returned (and no call on it runs).
template <SuspensionKind Kind, class T>
class Suspendable : public SuspendableBase<Kind>
{
protected:
    Suspendable() noexcept
    {
        // Here T is complete: the constructor is instantiated where T's constructor is defined.
        static_assert(requires(T& t) { t.TryResume(); },
                      "Suspendable<Kind, T>: T must provide `void TryResume()`, the re-check after "
                      "a waiter was published (public, or reachable by Suspendable as a friend)");
    }

private:
    void OnPublished() noexcept final { static_cast<T*>(this)->TryResume(); }
};
} // namespace TC::Synchronization
