// SplitGate's waiting side (see SplitGate.h).

#include <TC/Suspend.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/SplitGate.h>

namespace TC::Synchronization::detail
{
AcquireResult SplitGate::Acquire(Duration timeout)
{
    if (timeout == Duration::Zero()) // negatives are clamped to it (Duration.h)
    {
        // A zero or negative timeout never waits, timers or not: a published wait would be a
        // publish and a take-back (the kernel fires an expired deadline on the waiting thread:
        // 50-70 ns; a coroutine's through the timer thread, 25 us), and without EnableTimers no
        // limit at all, to learn what a look at the counters tells in 2.5 ns.
        const AcquireResult result = TryAcquireOrClosed();
        return result == AcquireResult::Pending ? AcquireResult::TimedOut : result;
    }
    // A timeout shorter than the spin would be overrun by it.
    const bool maySpin = timeout.IsInfinite() || timeout.Nanoseconds() >= kSpinNanoseconds;
    if (TryAcquire() || (maySpin && SpinForPermit()))
        return AcquireResult::Acquired;
    AcquireResult result;
    {
        WaitingScope counted(*this);
        result = TryTakeCounted() ? AcquireResult::Acquired : waiting_.queue.Acquire(timeout);
    }
    // Closed, or TimedOut: a permit may have come as the wait ended (with the Close, or just
    // after the deadline).
    if (result != AcquireResult::Acquired && TryAcquire())
        result = AcquireResult::Acquired;
    return result;
}

bool SplitGate::SpinForPermit() noexcept
{
    // Growing pauses: a releaser that is running adds several permits between two looks, and the
    // look that finds them lets the next acquires take theirs without reading released_ again.
    // With a spin batch, a round that finds fewer than the batch waits on, but the last round
    // takes what it finds: a lone permit is never left behind by more than the spin's length.
    for (unsigned round = 0, pauses = 4; round < kSpinRounds; ++round, pauses *= 2)
    {
        // Asked before every round: the spin must not keep a worker or a pump from the very work
        // that may release (the other end of a channel queued on the same worker, or on the
        // scheduler this thread pumps). A task whose worker has nothing else to run spins as a
        // thread does; one that went to sleep instead would pay a suspension and a cross-thread
        // resume every few permits (a task sending into a full Channel).
        if (!TC::SpinBeforeWaitHoldsNothingUp())
            return false;
        for (unsigned i = 0; i < pauses; ++i)
            CpuRelax();
        if (taken_.spinBatch > 1 && round + 1 < kSpinRounds && !BatchAvailable())
            continue;
        if (TryTakeCounted())
            return true;
    }
    return false;
}

void SplitGate::Grant(std::int64_t n, std::uint64_t waiters) noexcept
{
    for (; n > 0 && waiters > 0; --n, --waiters)
    {
        if (!TryTakeCounted())
            return; // an acquirer took it first: the waiters wait for the next release
        waiting_.queue.Release(1);
    }
}
} // namespace TC::Synchronization::detail
