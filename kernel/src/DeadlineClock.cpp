#include <TC/detail/DeadlineClock.h>

#include "Timers.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

// The counter: x86-64's time-stamp counter, or AArch64's generic timer (its virtual count,
// CNTVCT_EL0, which Linux lets user space read). Both tick at a fixed rate on every processor.
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <x86intrin.h>
#define TC_DEADLINE_CLOCK_COUNTER 1
#elif defined(__aarch64__) && defined(__linux__)
#define TC_DEADLINE_CLOCK_COUNTER 1
#else
#define TC_DEADLINE_CLOCK_COUNTER 0
#endif

namespace TC::detail
{
#if TC_DEADLINE_CLOCK_COUNTER
namespace
{
__extension__ typedef unsigned __int128 Wide; // products of ticks and a 32.32 scale

// One unordered read of the counter: it may execute a little before the instructions ahead of
// it (kReorderSlackNs covers that); a fence would cost more than the read.
inline std::uint64_t ReadCounter() noexcept
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    std::uint64_t ticks;
    asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
    return ticks;
#endif
}

constexpr std::int64_t kAnchorMaxAgeNs = 10'000'000;     // 10 ms
constexpr std::int64_t kCalibrationNs = 50'000'000;      // the shortest interval a scale comes from
constexpr std::int64_t kRecalibrationNs = 1'000'000'000; // then a fresh interval, to follow slews
constexpr std::int64_t kBracketMaxNs = 2'000;            // a wider bracket was preempted: unused
// An unordered counter read may execute a little before the instructions ahead of it.
constexpr std::int64_t kReorderSlackNs = 1'000;
// 1/1024 above the measured rate: NTP slews the steady clock by at most 500 ppm.
constexpr unsigned kRateMarginShift = 10;

// The anchor, a seqlock written by one refresher at a time. Every field is atomic and written
// with release after the odd sequence (read with acquire before the second sequence read), so
// a reader that sees any new field also sees the sequence change -- no fences, which
// ThreadSanitizer does not model.
struct alignas(64) Anchor
{
    std::atomic<std::uint64_t> sequence{0}; // odd while a refresher writes
    std::atomic<std::uint64_t> ticks{0};
    std::atomic<std::int64_t> ns{0};            // an upper bound of steady now at `ticks`
    std::atomic<std::uint64_t> nsPerTickQ32{0}; // 0: no calibration yet, or the counter is off
    std::atomic<std::uint64_t> maxAgeTicks{0};
};

// A calibration point: the counter read and the steady reads just before and after it.
struct Point
{
    std::uint64_t ticks = 0;
    std::int64_t before = 0;
    std::int64_t after = 0;
};

bool CounterIsKernelClock();

struct DeadlineClockState
{
    DeadlineClockState() noexcept
    {
        try
        {
            usable.store(CounterIsKernelClock(), std::memory_order_relaxed);
        }
        catch (...) // a failed read of the clock source: the steady clock it is
        {
        }
    }

    Anchor anchor;
    std::atomic<bool> refreshing{false};
    std::atomic<bool> usable{false};
    Point base; // guarded by `refreshing`
    bool hasBase = false;
};

// TC_DEADLINE_CLOCK=steady turns the counter off; =counter skips the clock-source check below
// (for tests under an emulator, whose /sys is the host's: the check for early answers in
// Refresh still holds then).
bool CounterIsKernelClock()
{
    const char* choice = std::getenv("TC_DEADLINE_CLOCK");
    if (choice && std::strcmp(choice, "steady") == 0)
        return false;
#if defined(__x86_64__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) || (edx & (1u << 8)) == 0)
        return false; // no invariant TSC: its rate may change with power states
    const char* const kernelName = "tsc";
#else
    const char* const kernelName = "arch_sys_counter";
#endif
    if (choice && std::strcmp(choice, "counter") == 0)
        return true;
    // The kernel uses the counter as its clock source only once it found it synchronized across
    // processors and steady; a counter it rejected (kvm-clock or hpet instead, or one whose
    // erratum it works around under another name) is not ours to trust.
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return static_cast<bool>(source >> name) && name == kernelName;
}

DeadlineClockState& State() noexcept
{
    static DeadlineClockState state;
    return state;
}

std::int64_t Predict(std::uint64_t ticks, std::uint64_t anchorTicks, std::int64_t anchorNs,
                     std::uint64_t nsPerTickQ32) noexcept
{
    const auto elapsed = static_cast<Wide>(ticks - anchorTicks) * nsPerTickQ32;
    return anchorNs + static_cast<std::int64_t>(elapsed >> 32) + 1; // +1: the shift truncates
}

void Publish(Anchor& anchor, std::uint64_t ticks, std::int64_t ns, std::uint64_t nsPerTickQ32,
             std::uint64_t maxAgeTicks) noexcept
{
    const std::uint64_t sequence = anchor.sequence.load(std::memory_order_relaxed);
    anchor.sequence.store(sequence + 1, std::memory_order_relaxed);
    // release: a reader that sees one of these values sees the odd sequence too.
    anchor.ticks.store(ticks, std::memory_order_release);
    anchor.ns.store(ns, std::memory_order_release);
    anchor.nsPerTickQ32.store(nsPerTickQ32, std::memory_order_release);
    anchor.maxAgeTicks.store(maxAgeTicks, std::memory_order_release);
    anchor.sequence.store(sequence + 2, std::memory_order_release);
}

// The slow path: the steady clock's answer, and on the way a fresh anchor (and scale) when no
// other thread is making one.
std::int64_t Refresh(DeadlineClockState& state) noexcept
{
    if (!state.usable.load(std::memory_order_relaxed) ||
        state.refreshing.exchange(true, std::memory_order_acquire))
        return SteadyNowNanoseconds();
    Point point;
    point.before = SteadyNowNanoseconds();
    point.ticks = ReadCounter();
    point.after = SteadyNowNanoseconds();
    Anchor& anchor = state.anchor;
    const std::uint64_t oldScale = anchor.nsPerTickQ32.load(std::memory_order_relaxed);
    const std::uint64_t oldTicks = anchor.ticks.load(std::memory_order_relaxed);
    if (oldScale != 0 && point.ticks >= oldTicks &&
        Predict(point.ticks, oldTicks, anchor.ns.load(std::memory_order_relaxed), oldScale) <
            point.before)
    {
        // The last scale would have answered early: whatever made it wrong (a clock source
        // change, a slew beyond NTP's), the steady clock answers from here on.
        state.usable.store(false, std::memory_order_relaxed);
        Publish(anchor, 0, 0, 0, 0);
        state.refreshing.store(false, std::memory_order_release);
        return point.after;
    }
    if (point.after - point.before <= kBracketMaxNs)
    {
        if (!state.hasBase || point.ticks <= state.base.ticks)
        {
            state.base = point;
            state.hasBase = true;
        }
        else if (point.before - state.base.after >= kCalibrationNs)
        {
            // The most steady time the interval can have lasted, over its ticks: never below
            // the true rate; then the slew margin on top.
            const std::uint64_t elapsedTicks = point.ticks - state.base.ticks;
            const auto most = static_cast<Wide>(point.after - state.base.before) << 32;
            std::uint64_t scale =
                static_cast<std::uint64_t>((most + elapsedTicks - 1) / elapsedTicks);
            scale += (scale >> kRateMarginShift) + 1;
            const std::uint64_t maxAgeTicks =
                static_cast<std::uint64_t>((static_cast<Wide>(kAnchorMaxAgeNs) << 32) / scale);
            Publish(anchor, point.ticks, point.after + kReorderSlackNs, scale, maxAgeTicks);
            if (point.before - state.base.after >= kRecalibrationNs)
                state.base = point;
        }
        else if (oldScale != 0)
        {
            // Too soon for a new scale: the last one, from a fresh anchor.
            Publish(anchor, point.ticks, point.after + kReorderSlackNs, oldScale,
                    anchor.maxAgeTicks.load(std::memory_order_relaxed));
        }
    }
    state.refreshing.store(false, std::memory_order_release);
    return point.after;
}
} // namespace

std::int64_t DeadlineNowNanoseconds() noexcept
{
    DeadlineClockState& state = State();
    Anchor& anchor = state.anchor;
    const std::uint64_t now = ReadCounter();
    // acquire, each: see Anchor.
    const std::uint64_t sequence = anchor.sequence.load(std::memory_order_acquire);
    const std::uint64_t anchorTicks = anchor.ticks.load(std::memory_order_acquire);
    const std::int64_t ns = anchor.ns.load(std::memory_order_acquire);
    const std::uint64_t scale = anchor.nsPerTickQ32.load(std::memory_order_acquire);
    const std::uint64_t maxAgeTicks = anchor.maxAgeTicks.load(std::memory_order_acquire);
    // Unsigned: a count behind the anchor's (read on another processor a moment before) is old.
    if (scale != 0 && (sequence & 1) == 0 && now - anchorTicks < maxAgeTicks &&
        anchor.sequence.load(std::memory_order_relaxed) == sequence)
        return Predict(now, anchorTicks, ns, scale);
    return Refresh(state);
}

bool DeadlineClockUsesCounter() noexcept
{
    DeadlineClockState& state = State();
    return state.usable.load(std::memory_order_relaxed) &&
           state.anchor.nsPerTickQ32.load(std::memory_order_relaxed) != 0;
}
#else
std::int64_t DeadlineNowNanoseconds() noexcept
{
    return SteadyNowNanoseconds();
}

bool DeadlineClockUsesCounter() noexcept
{
    return false;
}
#endif
} // namespace TC::detail
