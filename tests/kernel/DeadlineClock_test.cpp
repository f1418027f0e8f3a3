// DeadlineClock: a timed wait's "now" is never below the steady clock and at most the documented
// slack above it, from several threads at once, across anchor refreshes and recalibrations;
// TC_DEADLINE_CLOCK=steady turns the counter off ([steady], run by ctest with that variable set)
// and TC_DEADLINE_CLOCK=counter uses it without the clock-source check
// (kernel.DeadlineClock.counter, which covers the counter where the kernel's clock is another -- a
// VM's kvm-clock, or an AArch64 build run under qemu-user).

#include "Timers.h"
#include <TC/detail/DeadlineClock.h>

#include <TC/Core.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

using namespace std::chrono_literals;
using TC::detail::DeadlineNowNanoseconds;
using TC::detail::kDeadlineClockSlackNs;
using TC::detail::SteadyNowNanoseconds;

namespace
{
// Whether the deadline clock should use the counter once calibrated: the library's rule, read
// independently.
bool CounterExpected()
{
    const char* choice = std::getenv("TC_DEADLINE_CLOCK");
    if (choice && std::string(choice) == "steady")
        return false;
#if defined(__x86_64__) && defined(__linux__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) || (edx & (1u << 8)) == 0)
        return false; // no invariant TSC
    const std::string kernelName = "tsc";
#elif defined(__aarch64__) && defined(__linux__)
    const std::string kernelName = "arch_sys_counter";
#else
    return false;
#endif
    if (choice && std::string(choice) == "counter")
        return true;
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return static_cast<bool>(source >> name) && name == kernelName;
}

struct Bounds
{
    std::int64_t calls = 0;
    std::int64_t early = 0;       // answers below a steady read made before the call
    std::int64_t tooLate = 0;     // answers more than the slack above a read made after it
    std::int64_t worstLateNs = 0; // above the read after, the largest seen
};

// Brackets each answer between two steady reads for `span`, pausing now and then so the anchor
// ages past its limit and is replaced.
Bounds Check(std::chrono::milliseconds span, unsigned seed)
{
    Bounds bounds;
    const auto end = std::chrono::steady_clock::now() + span;
    std::uint32_t random = seed;
    while (std::chrono::steady_clock::now() < end)
    {
        for (int i = 0; i < 1000; ++i)
        {
            const std::int64_t before = SteadyNowNanoseconds();
            const std::int64_t now = DeadlineNowNanoseconds();
            const std::int64_t after = SteadyNowNanoseconds();
            ++bounds.calls;
            bounds.early += now < before;
            bounds.tooLate += now - after > kDeadlineClockSlackNs;
            bounds.worstLateNs = std::max(bounds.worstLateNs, now - after);
        }
        random = random * 1664525u + 1013904223u;
        if ((random >> 24) < 8) // about one round in 32: a sleep past the anchor's 10 ms
            std::this_thread::sleep_for(12ms);
    }
    return bounds;
}
} // namespace

TEST_CASE("The deadline clock is never below the steady clock, nor more than its slack above")
{
    constexpr unsigned kThreads = 3;
    std::vector<Bounds> results(kThreads);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < kThreads; ++t)
        threads.emplace_back([&results, t] { results[t] = Check(1500ms, 17 + t); });
    for (auto& thread : threads)
        thread.join();
    Bounds total;
    for (const Bounds& bounds : results)
    {
        total.calls += bounds.calls;
        total.early += bounds.early;
        total.tooLate += bounds.tooLate;
        total.worstLateNs = std::max(total.worstLateNs, bounds.worstLateNs);
    }
    INFO("calls " << total.calls << ", worst " << total.worstLateNs << " ns above the read after");
    CHECK(total.calls > 100'000);
    CHECK(total.early == 0);
    // Preemption between the answer and the read after it only makes that read later; a read
    // after that lands more than the slack below the answer means the answer was late.
    CHECK(total.tooLate == 0);
    INFO("TC_DEADLINE_CLOCK=" << (std::getenv("TC_DEADLINE_CLOCK")
                                      ? std::getenv("TC_DEADLINE_CLOCK")
                                      : "")
                              << ", counter expected: " << CounterExpected());
    // 1.5 s is ample for a calibration; the counter is never used where it is not expected.
    CHECK(TC::detail::DeadlineClockUsesCounter() == CounterExpected());
}

TEST_CASE("Timed waits on the deadline clock end no earlier than their timeout")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(1u);
    std::atomic<int> early{0};
    std::atomic<int> timedOut{0};
    struct Never final : TC::ISuspendCallback
    {
        void OnSuspended(TC::SuspendedTask) noexcept override {}
        bool OnTimeout(TC::SuspendedTask) noexcept override { return true; }
    };
    auto join = scheduler.Start(
        [&]
        {
            Never never;
            for (int i = 0; i < 200; ++i)
            {
                const auto timeout = std::chrono::microseconds(50 + (i % 7) * 150);
                const auto start = std::chrono::steady_clock::now();
                if (!TC::SuspendTaskFor(&never, timeout))
                    ++timedOut;
                early += std::chrono::steady_clock::now() - start < timeout;
            }
        });
    join.Join();
    CHECK(timedOut == 200);
    CHECK(early == 0);
}

TEST_CASE("TC_DEADLINE_CLOCK=steady keeps the counter off", "[.steady]")
{
    REQUIRE(std::getenv("TC_DEADLINE_CLOCK") != nullptr);
    const Bounds bounds = Check(300ms, 5);
    CHECK(bounds.early == 0);
    CHECK(bounds.tooLate == 0);
    CHECK_FALSE(TC::detail::DeadlineClockUsesCounter());
}
