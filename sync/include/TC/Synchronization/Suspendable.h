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
// T must make TryResume accessible (public, or befriend Suspendable). Lifetime: as
// SuspendableBase<Kind>.
template <SuspensionKind Kind, class T>
class Suspendable : public SuspendableBase<Kind>
{
protected:
    Suspendable() noexcept = default;

private:
    void OnPublished() noexcept final { static_cast<T*>(this)->TryResume(); }
};
} // namespace TC::Synchronization
