#pragma once
// BusyCount: lets the waiter that may destroy an object wait out the callers still inside it.

#include <TC/detail/Export.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization::detail
{
class BusyCount;

// One open Scope on this thread's stack (a per-thread list); `unit` names its half.
struct BusyFrame
{
    const BusyCount* busy = nullptr;
    BusyFrame* outer = nullptr;
    std::uint64_t unit = 0;
};

// This thread's open scopes of one BusyCount, per half.
struct OwnScopes
{
    std::uint32_t half[2] = {0, 0};
};

// This thread's scope list; out of line so no thread_local address outlives a task switch.
TC_API void PushBusyFrame(BusyFrame& frame) noexcept;
TC_API void PopBusyFrame(BusyFrame& frame) noexcept;
TC_API OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept;

// Callers hold a Scope around the state change and resumes that end their use of an object;
// the waiter that may destroy it calls Drain after seeing that change.
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
            // release: the operation happens before the drainer's destruction. Last access.
            busy_.word_.fetch_sub(frame_.unit, std::memory_order_release);
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        // Counts the scope in the current half; returns the unit.
        static std::uint64_t Enter(BusyCount& busy) noexcept
        {
            // relaxed: picks the half; a stale epoch costs a drainer a wait, not safety.
            const std::uint64_t unit =
                (busy.word_.load(std::memory_order_relaxed) >> kEpochShift) & kUnits;
            busy.word_.fetch_add(unit); // seq_cst: before the state change
            return unit;
        }

        BusyCount& busy_;
        BusyFrame frame_;
    };

    void Drain() const noexcept
    {
        // acquire: pairs with the scopes' release decrement.
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        if ((word & kCountsMask) != 0)
            DrainFrom(word);
    }

    // Drain only if `should()` (costlier than the look, made only when a scope is open).
    template <class Predicate>
    void DrainIf(Predicate should) const noexcept
    {
        // acquire: as in Drain.
        const std::uint64_t word = word_.load(std::memory_order_acquire);
        if ((word & kCountsMask) != 0 && should())
            DrainFrom(word);
    }

private:
    // Counts: half 0 bits 0-19, half 1 bits 20-39; one-hot epoch at bit 40 / 60; clean flips
    // into half 0 in bits 41-47, half 1 in 48-54.
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

    // Drain past a first look that found scopes open.
    void DrainFrom(std::uint64_t look) const noexcept;

    friend OwnScopes BusyFramesOnThisThread(const BusyCount& busy) noexcept;

    // Starts with half 0 current.
    static constexpr std::uint64_t kInitial = std::uint64_t{1} << kEpochShift;
    // mutable: a (const) drainer may flip the epoch.
    mutable std::atomic<std::uint64_t> word_{kInitial};
};
} // namespace TC::Synchronization::detail
