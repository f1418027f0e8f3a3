#pragma once
// WaitGroup: waits until every piece of work that was Add-ed has called Done.

#include <TC/Synchronization/Waitable.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization
{
// A reusable counter (Go's sync.WaitGroup, marl's WaitGroup): Add(n) before starting work, Done()
// when a piece finishes, Wait() suspends (task or converted thread; coroutines co_await) until the
// count is zero. When the count reaches zero every waiter suspended then is resumed; the group may
// then be Add-ed to again.
//
// Reuse (as Go's WaitGroup states it): an Add that starts a new round must come after every Wait
// of the round before has returned. The Done that reached zero resumes the waiters it finds when
// it gets to them, not atomically with its decrement, so a waiter that suspended after an early
// Add could be resumed by that Done and return while the new round's count is not zero. (The
// common shape -- the same task adds, starts the work and waits, round after round -- follows
// the rule by itself.) Checked mode fails an Add that takes the count up from zero while a
// waiter is still suspended: it can only be one of the round before.
//
// Destruction: by its creator (the task or converted thread that constructed it) as soon as its
// Wait returned, provided nobody adds to it or starts a wait any more and every other waiter was
// suspended on it, or had returned, before the count reached zero: the creator's Wait returns
// only once every Add/Done and every re-check that was running has left the group, and every
// other waiter -- task, thread or coroutine -- touches nothing of it once resumed. By anyone else
// only when nobody waits on it and no Add/Done is running (a coroutine that owns one it waits on,
// which is never its creator, uses a Latch instead: any waiter may destroy that).
//
// Wait(), Wait(timeout), co_await wg, co_await wg.WaitAsync(timeout): from Waitable.
/// - Wait(timeout) returns true once the count was zero, false on timeout (no limit without
///   EnableTimers); the count is not touched either way.
/// - A timed waiter counts as waiting until its Wait returned (see SuspendableBase).
class WaitGroup : public Waitable<SuspensionKind::Multiple, WaitGroup>
{
public:
    explicit WaitGroup(std::int64_t initial = 0) noexcept : count_(initial) {}

    // Adds n pieces of work (n may be negative; reaching zero then releases the waiters).
    void Add(std::int64_t n = 1) noexcept
    {
        // Ends with the last access: the creator's Wait, which may see the count at zero
        // before this Add's Resume begins, waits it out.
        const detail::BusyCount::Scope busy = ResumerScope();
#if TC_CHECKED
        // Read before the count moves: a waiter of the new round cannot be suspended yet.
        const bool waiterBefore = n > 0 && IsSuspended();
#endif
        const std::int64_t before = count_.fetch_add(n); // seq_cst: the state change
        const std::int64_t after = before + n;
        TC_CHECK(after >= 0, "WaitGroup count never goes negative", "WaitGroup::Done/Add below 0");
        TC_CHECK(!(before == 0 && waiterBefore),
                 "a WaitGroup round starts after every Wait of the last one returned",
                 "WaitGroup::Add took the count up from zero while a waiter was still suspended");
        if (after == 0)
            Resume();
    }

    // One piece of work finished.
    void Done() noexcept { Add(-1); }

    // Waitable: true while the count is zero.
    bool TryWait() const noexcept { return count_.load() == 0; }

    std::int64_t Count() const noexcept { return count_.load(); }

private:
    friend class Waitable<SuspensionKind::Multiple, WaitGroup>;
    void Resume() noexcept { SuspendableBase<SuspensionKind::Multiple>::Resume(); }

    std::atomic<std::int64_t> count_;
};
} // namespace TC::Synchronization
