#pragma once
// SplitGate: a counting gate whose releasing and acquiring sides (a channel's senders and
// receivers) count on separate cache lines; a waiter queue only when someone waits.

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/Synchronization/detail/SemaphoreCore.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstdint>

namespace TC::Synchronization::detail
{
// available = released_ - taken_; a release that finds waiters counted parks permits in a FIFO.
/// - seq_cst write-then-read on both sides: a waiter finds the permit or the release the waiter.
/// - A parked permit is never lost; TryAcquire takes one when the counters are empty
///   (tests/model/split_gate.pml). A newcomer may pass queued waiters.
/// - Close: waiters resume Closed; permits released before or after stay acquirable.
/// - Destroy it only when no call on it runs.
class TC_API SplitGate
{
public:
    // `spinBatch` (>= 1): permits a spinning thread waits for before taking one.
    explicit SplitGate(std::int64_t initial = 0, std::uint64_t spinBatch = 1) noexcept
    {
        TC_CHECK(initial >= 0, "a gate's count stays in range",
                 "a SplitGate with a negative count");
        TC_CHECK(spinBatch >= 1, "a gate's spin batch is at least one permit",
                 "a SplitGate with a spin batch of 0");
        released_.value.store(static_cast<std::uint64_t>(initial), std::memory_order_relaxed);
        taken_.spinBatch = spinBatch;
    }
    SplitGate(const SplitGate&) = delete;
    SplitGate& operator=(const SplitGate&) = delete;

    // Takes a permit without waiting: counted, else parked.
    bool TryAcquire() noexcept { return TryTakeCounted() || TryTakeParked(); }

    // Acquired; Closed if closed and none left (looked at again after the close); else Pending.
    AcquireResult TryAcquireOrClosed() noexcept
    {
        if (TryAcquire())
            return AcquireResult::Acquired;
        if (!waiting_.queue.IsClosed())
            return AcquireResult::Pending;
        return TryAcquire() ? AcquireResult::Acquired : AcquireResult::Closed;
    }

    // Acquired, or Closed once closed and empty. Suspends meanwhile.
    AcquireResult Acquire() { return Acquire(Duration::Infinite()); }
    // As Acquire, or TimedOut. Zero or negative: a look, never a wait.
    AcquireResult Acquire(Duration timeout);

    // Adds n >= 0 permits; hands them to counted waiters.
    void Release(std::int64_t n = 1) noexcept
    {
        TC_CHECK(n >= 0, "a gate's count stays in range", "SplitGate::Release(n) with n < 0");
        // seq_cst add then load: the release's half of the handshake; releases our writes.
        released_.value.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_seq_cst);
        const std::uint64_t waiters = waiting_.value.load(std::memory_order_seq_cst);
        if (waiters != 0) [[unlikely]]
            Grant(n, waiters);
    }

    // Waiters resume Closed; acquires finding no permit return Closed. Idempotent.
    void Close() noexcept { waiting_.queue.Close(); }
    bool IsClosed() const noexcept { return waiting_.queue.IsClosed(); }

    // Snapshot of available permits (counted and parked); exact when idle.
    std::int64_t Available() const noexcept
    {
        const std::uint64_t taken = taken_.value.load(std::memory_order_acquire);
        const std::uint64_t released = released_.value.load(std::memory_order_acquire);
        const auto counted = static_cast<std::int64_t>(released - taken);
        return (counted > 0 ? counted : 0) + waiting_.queue.Available();
    }

    // co_await: yields Acquired or Closed.
    class [[nodiscard("co_await it")]] AcquireAwaiter
    {
    public:
        explicit AcquireAwaiter(SplitGate & owner) noexcept
            : owner_(owner), inner_(owner.waiting_.queue)
        {
        }
        AcquireAwaiter(const AcquireAwaiter&) = delete;
        AcquireAwaiter& operator=(const AcquireAwaiter&) = delete;
        // Stops counting a waiter whose frame was destroyed while suspended.
        ~AcquireAwaiter()
        {
            if (counted_)
                owner_.StopWaiting();
        }

        bool await_ready() noexcept
        {
            if (owner_.TryAcquire())
                return acquired_ = true;
            owner_.StartWaiting();
            counted_ = true;
            if (owner_.TryTakeCounted())
                return acquired_ = true;
            return inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        AcquireResult await_resume() noexcept
        {
            if (counted_)
            {
                owner_.StopWaiting(); // at once: a release counting us would park a permit
                counted_ = false;
            }
            if (acquired_)
                return AcquireResult::Acquired;
            const AcquireResult result = inner_.await_resume();
            if (result == AcquireResult::Closed && owner_.TryAcquire())
                return AcquireResult::Acquired; // released concurrently with Close
            return result;
        }

    private:
        SplitGate& owner_;
        SemaphoreCore::AcquireAwaiter inner_;
        bool acquired_ = false;
        bool counted_ = false;
    };

private:
    // Takes one counted permit; false if none at a fresh look.
    bool TryTakeCounted() noexcept
    {
        std::uint64_t taken = taken_.value.load(std::memory_order_relaxed); // the CAS decides
        std::uint64_t seen = taken_.seen.load(std::memory_order_acquire);
        for (;;)
        {
            if (taken >= seen)
            {
                // seq_cst: the acquirer's half of the handshake. Others reuse this look
                // through `seen` (release/acquire).
                seen = released_.value.load(std::memory_order_seq_cst);
                if (taken >= seen)
                    return false;
                taken_.seen.store(seen, std::memory_order_release); // older is safe too
            }
            if (taken_.value.compare_exchange_weak(taken, taken + 1, std::memory_order_acq_rel,
                                                   std::memory_order_relaxed))
                return true;
        }
    }

    static constexpr unsigned kSpinRounds = 5;
    // About how long SpinForPermit's rounds last: no spin below it.
    static constexpr std::int64_t kSpinNanoseconds = 2500;
    // Waits for spinBatch permits while the spin lasts (design notes).
    bool SpinForPermit() noexcept;
    // At least `spinBatch` counted permits at a fresh look (taken_ first).
    bool BatchAvailable() const noexcept
    {
        const std::uint64_t taken = taken_.value.load(std::memory_order_relaxed);
        return released_.value.load(std::memory_order_relaxed) - taken >= taken_.spinBatch;
    }

    // Takes a parked permit; with waiters counted, parks a counted one in its place
    // (tests/model/split_gate.pml, BROKEN_NO_REGRANT).
    bool TryTakeParked() noexcept
    {
        if (!waiting_.queue.TryAcquire())
            return false;
        // seq_cst: after the take, so a waiter the parking release saw is seen.
        const std::uint64_t waiters = waiting_.value.load(std::memory_order_seq_cst);
        if (waiters != 0) [[unlikely]]
            Grant(1, waiters);
        return true;
    }

    // seq_cst: the waiter's half of the handshake.
    void StartWaiting() noexcept { waiting_.value.fetch_add(1, std::memory_order_seq_cst); }
    void StopWaiting() noexcept { waiting_.value.fetch_sub(1, std::memory_order_relaxed); }

    // Counts a waiter in waiting_ for its lifetime.
    struct WaitingScope
    {
        SplitGate& gate;
        explicit WaitingScope(SplitGate& owner) noexcept : gate(owner) { gate.StartWaiting(); }
        ~WaitingScope() { gate.StopWaiting(); }
        WaitingScope(const WaitingScope&) = delete;
        WaitingScope& operator=(const WaitingScope&) = delete;
    };

    // Release with `waiters` counted: parks up to min(n, waiters) permits, each from the counters.
    void Grant(std::int64_t n, std::uint64_t waiters) noexcept;

    struct alignas(64) Released
    {
        std::atomic<std::uint64_t> value{0};
    };
    struct alignas(64) Taken
    {
        std::atomic<std::uint64_t> value{0};
        std::atomic<std::uint64_t> seen{0}; // an acquirer's last look at released_
        std::uint64_t spinBatch = 1;        // set by the constructor
    };
    // Touched only when someone waits, so they share a line.
    struct alignas(64) Waiting
    {
        std::atomic<std::uint64_t> value{0}; // acquirers between count and return
        SemaphoreCore queue{0};              // parked permits and the waiters' FIFO
    };

    Released released_;
    Taken taken_;
    Waiting waiting_;
};
} // namespace TC::Synchronization::detail
