#pragma once
// BusyCount: lets the waiter that may destroy an object wait out the callers still inside it, so
// that it may destroy the object as soon as its wait returns.

#include <TC/detail/Export.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization::detail
{
class BusyCount;

// One open BusyCount::Scope on this thread's stack; the thread's scopes form a list. `unit` is
// what the scope added to the count word, which names the half it counts in.
struct BusyFrame
{
    const BusyCount* busy = nullptr;
    BusyFrame* outer = nullptr;
    std::uint64_t unit = 0;
};

// The scopes of one BusyCount open on the calling thread's stack, per half.
struct OwnScopes
{
    std::uint32_t half[2] = {0, 0};
};

// The calling thread's list of open scopes (SuspendableBase.cpp). Out of line on purpose: a
// waiter drains after a task switch, possibly on another thread, and no compiler may reuse a
// thread_local address computed before it.
TC_API void PushBusyFrame(BusyFrame& frame) noexcept;
TC_API void PopBusyFrame(BusyFrame& frame) noexcept;
TC_API OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept;

// An opening operation (a WaitGroup's Done, a Resume) holds a Scope around its state change and
// its resumes, and so does a waiter's publication and re-check (SuspendableBase); the scope's end
// is its last access to the object. The waiter that may destroy the object (a Multiple object's
// creator, a Single object's waiter) calls Drain once it saw the state open -- which that
// operation's scope precedes -- and Drain returns once every scope that began before its first
// look has ended, except the scopes open on the draining thread's own stack (code resumed inline
// from inside one cannot wait for it to end). Scopes that begin after the look are not waited for
// (they are legitimate only if the object lives on), so a stream of them cannot starve the drain:
// it lasts as long as the rest of the scopes it found (a few resumes, never a suspension).
//
// Two halves (as SRCU's two epochs): one word holds two counts, the epoch naming the current
// half, where new scopes count, and per half a small counter of clean flips into it. A drainer
// needs each half seen clear (at or below its own scopes there) once after its look; the old
// half only drains, and a current half that is not clear the drainer makes old by flipping the
// epoch, which it may do only while the other half holds no scope but its own. A flip into an
// empty half bumps that half's counter: the flip's compare-exchange reads a word later in the
// word's modification order than the look of any drainer that looked before it, so every scope
// counted at that look in that half has left, and each such drainer takes the changed counter as
// the half seen clear (two drainers never undo each other's progress; a flip into a half that
// holds the flipper's own scopes proves nothing and bumps nothing). A scope that read the epoch
// just before a flip counts in the old half: it is counted all the same, as each scope leaves the
// half it entered, and a thread does that at most once per flip, so the old half still empties. The
// flip is a compare-exchange loop, lock-free: it fails only when the word changed in between.
class TC_API BusyCount
{
public:
    class Scope
    {
    public:
        explicit Scope(BusyCount& busy) noexcept : busy_(busy), frame_{&busy, nullptr, Enter(busy)}
        {
            PushBusyFrame(frame_);
        }
        ~Scope()
        {
            PopBusyFrame(frame_);
            // release: everything the operation did to the object happens before the drained
            // waiter's destruction of it (every later change of the word is a read-modify-write,
            // so it continues this release sequence). The last access.
            busy_.word_.fetch_sub(frame_.unit, std::memory_order_release);
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        // Counts the scope in the current half and returns what it added.
        static std::uint64_t Enter(BusyCount& busy) noexcept
        {
            // relaxed: only picks the half; a stale epoch costs a drainer a wait, not safety.
            const std::uint64_t unit =
                (busy.word_.load(std::memory_order_relaxed) >> kEpochShift) & kUnits;
            busy.word_.fetch_add(unit); // seq_cst: ordered before the state change
            return unit;
        }

        BusyCount& busy_;
        BusyFrame frame_;
    };

    void Drain() const noexcept
    {
        // acquire: pairs with the scopes' release decrement. The opening operation's increment
        // happens before the waiter saw the state open, so this first look reads the word at or
        // after it.
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        if ((word & kCountsMask) != 0)
            DrainFrom(word);
    }

    // Drain for a caller that drains only if `should()` (a check that costs more than the look,
    // made only when a scope is open): the look comes first, as in Drain.
    template <class Predicate>
    void DrainIf(Predicate should) const noexcept
    {
        // acquire: as in Drain.
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        if ((word & kCountsMask) != 0 && should())
            DrainFrom(word);
    }

private:
    // The word: half 0's count in bits 0-19, half 1's in 20-39; the epoch one-hot, bit 40 for
    // half 0 and bit 60 for half 1, so that shifting it down by 40 gives the current half's unit;
    // clean flips into half 0 in bits 41-47 and into half 1 in 48-54 (modulo 128: a change seen
    // means at least one flip). A count holds the scopes open at once, a few per thread.
    static constexpr unsigned kCountBits = 20;
    static constexpr std::uint64_t kCountMask = (std::uint64_t{1} << kCountBits) - 1;
    static constexpr std::uint64_t Unit(unsigned half) noexcept
    {
        return std::uint64_t{1} << (kCountBits * half);
    }
    static constexpr std::uint64_t kCountsMask = (std::uint64_t{1} << (2 * kCountBits)) - 1;
    static constexpr unsigned kEpochShift = 2 * kCountBits;
    static constexpr std::uint64_t kUnits = 1 | (std::uint64_t{1} << kCountBits); // both units
    static constexpr std::uint64_t kEpochBits = kUnits << kEpochShift;
    static constexpr unsigned kFlipsShift = kEpochShift + 1;
    static constexpr unsigned kFlipsBits = 7;
    static constexpr std::uint64_t kFlipsMask = (std::uint64_t{1} << kFlipsBits) - 1;

    static constexpr unsigned CurrentHalf(std::uint64_t word) noexcept
    {
        return ((word >> kEpochShift) & kUnits) == Unit(0) ? 0u : 1u;
    }
    static constexpr std::uint64_t Count(std::uint64_t word, unsigned half) noexcept
    {
        return (word >> (kCountBits * half)) & kCountMask;
    }
    static constexpr std::uint64_t Flips(std::uint64_t word, unsigned half) noexcept
    {
        return (word >> (kFlipsShift + kFlipsBits * half)) & kFlipsMask;
    }
    static constexpr std::uint64_t BumpFlips(std::uint64_t word, unsigned half) noexcept
    {
        const unsigned shift = kFlipsShift + kFlipsBits * half;
        return (word & ~(kFlipsMask << shift)) | (((Flips(word, half) + 1) & kFlipsMask) << shift);
    }

    // Drain past the first look, which found scopes open (SuspendableBase.cpp).
    void DrainFrom(std::uint64_t look) const noexcept;

    friend OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept;

    // Starts with half 0 current.
    static constexpr std::uint64_t kInitial = std::uint64_t{1} << kEpochShift;
    // mutable: a drainer (a const call: it only waits) may flip the epoch.
    mutable std::atomic<std::uint64_t> word_{kInitial};
};
} // namespace TC::Synchronization::detail
