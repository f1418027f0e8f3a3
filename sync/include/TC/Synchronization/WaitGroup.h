#pragma once
// WaitGroup: waits until every piece of work that was Add-ed has called Done.
// Reusable (Go's sync.WaitGroup, marl's WaitGroup); waiters: tasks, threads, coroutines.

#include <TC/Synchronization/Waitable.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization
{
/// ```cpp
/// WaitGroup wg;
/// wg.Add(2); Start([&] { A(); wg.Done(); }); Start([&] { B(); wg.Done(); }); wg.Wait();
/// ```
/// - Reaching zero resumes every waiter suspended then. Reuse: a new round's first Add comes
///   after every Wait of the last round returned (checked mode fails an Add from zero while a
///   waiter is still suspended).
/// - Wait(timeout): true once the count was zero, false on timeout (no limit without
///   EnableTimers); the count is untouched. A timed waiter counts as waiting until it returned.
/// - Destruction: by its creator (task or converted thread that constructed it) once its Wait
///   returned, if nobody adds or starts a wait any more and every other waiter had suspended or
///   returned before the count reached zero; by anyone else only when nobody waits and no
///   Add/Done runs. A coroutine owning one it waits on uses a Latch instead.
/// - Wait(), Wait(timeout), co_await wg, co_await wg.WaitAsync(timeout): from Waitable.
class WaitGroup : public Waitable<SuspensionKind::Multiple, WaitGroup>
{
public:
    explicit WaitGroup(std::int64_t initial = 0) noexcept : count_(initial) {}

    // Adds n pieces of work (n may be negative; reaching zero releases the waiters).
    void Add(std::int64_t n = 1) noexcept
    {
        // The creator's Wait waits out this scope.
        const detail::BusyCount::Scope busy = ResumerScope();
#if TC_CHECKED
        // Read before the count moves: no new-round waiter can be suspended yet.
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
