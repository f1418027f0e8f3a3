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

// The calling thread's list of open scopes; out of line so no thread_local address outlives a
// task switch.
TC_API void PushBusyFrame(BusyFrame& frame) noexcept;
TC_API void PopBusyFrame(BusyFrame& frame) noexcept;
TC_API OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept;

// Callers hold a Scope around the state change and resumes that end their use of an object; the
// waiter that may destroy it calls Drain once it saw that state change.
//   { BusyCount::Scope busy(count_); /* change state, resume */ }   // waiter: count_.Drain();
/// - Drain returns once every scope begun before its first look ended, except the draining
///   thread's own; later scopes are not waited for, so it cannot starve (never suspends).
/// - Two halves in one word (as SRCU's epochs), flipped by a lock-free CAS (design notes).
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
            // release: the operation happens before the drained waiter's destruction of the
            // object (later changes are RMWs, continuing this release sequence). The last access.
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
        // acquire: pairs with the scopes' release decrement; reads at or after the opening
        // operation's increment.
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
    // Half 0's count in bits 0-19, half 1's in 20-39; one-hot epoch at bit 40 / 60 (shifted down
    // by 40: the current unit); clean flips into half 0 in bits 41-47, half 1 in 48-54.
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
