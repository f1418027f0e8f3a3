// guide-timers: the code of the "Timers" guide. Timed waits before and after EnableTimers, both
// outcomes of OnTimeout, and zero, negative and infinite durations. Prints one line per case and
// exits non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Synchronization/AutoResetEvent_s.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using TC::Synchronization::AutoResetEvent_s;

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-62s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

double MillisecondsSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// [guide:slot]
// One waiter in one slot. OnTimeout takes the handle back with the same exchange a resumer
// uses, so exactly one of them gets it; it also counts what it answered.
class Slot : public TC::ISuspendCallback
{
public:
    virtual ~Slot() = default;

    // A resumer: claims the waiter (or nothing) -- the claim and the ResumeTask may be apart.
    TC::SuspendedTask Claim() noexcept { return waiter_.exchange(nullptr); }
    bool Published() const noexcept { return waiter_.load() != nullptr; }

    std::atomic<int> tookBack{0}; // OnTimeout returned true: the wait returns false
    std::atomic<int> tooLate{0};  // OnTimeout returned false: a resumer has the handle

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override { waiter_.store(task); }

    // On the timer thread, while the waiter is still suspended. Never resumes it.
    bool OnTimeout(TC::SuspendedTask task) noexcept override
    {
        TC::SuspendedTask expected = task;
        const bool took = waiter_.compare_exchange_strong(expected, nullptr);
        ++(took ? tookBack : tooLate);
        return took;
    }

    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};
// [/guide:slot]
} // namespace

int main()
{
    {
        // [guide:before-enable]
        // Before EnableTimers there is no timer thread, and a timed wait has no limit: this one
        // asks for 1 ms and still returns true when the Set comes 30 ms later.
        AutoResetEvent_s event;
        std::thread setter(
            [&]
            {
                std::this_thread::sleep_for(30ms);
                event.Set();
            });
        const bool passed = event.Wait(1ms);
        setter.join();
        // [/guide:before-enable]
        Check(!TC::TimersEnabled() && passed, "no EnableTimers: Wait(1ms) waits for the Set");
    }

    // [guide:enable]
    TC::EnableTimers(); // starts the one timer thread; idempotent, any thread
    // [/guide:enable]
    Check(TC::TimersEnabled(), "EnableTimers: the timer thread runs");

    {
        AutoResetEvent_s event;
        const auto start = Clock::now();
        const bool passed = event.Wait(10ms);
        Check(!passed && MillisecondsSince(start) >= 9.5,
              "Wait(10ms) with no Set: false after 10 ms");
    }
    {
        AutoResetEvent_s event;
        std::thread setter([&] { event.Set(); });
        const bool passed = event.Wait(5s);
        setter.join();
        Check(passed, "Wait(5s) with a Set: true, long before 5 s");
    }

    {
        // [guide:zero]
        // Zero and negative durations mean "already expired", and a set event still passes.
        AutoResetEvent_s unset, set(true);
        const bool zero = unset.Wait(0ms);      // false: nothing to take, expired at once
        const bool negative = unset.Wait(-5ms); // the same: Duration clamps it to zero
        const bool ready = set.Wait(0ms);       // true: TryWait passes before any timer
        // [/guide:zero]
        Check(!zero && !negative && ready, "zero and negative: false unless already set");
        Check(TC::Duration(-5ms) == TC::Duration::Zero(), "Duration(-5ms) == Duration::Zero()");
    }
    {
        AutoResetEvent_s event;
        std::thread setter(
            [&]
            {
                std::this_thread::sleep_for(20ms);
                event.Set();
            });
        const bool passed = event.Wait(TC::Duration::Infinite());
        setter.join();
        Check(passed, "Duration::Infinite(): no limit, like Wait()");
    }

    TC::Scheduler scheduler(1u);
    {
        // [guide:timed-out]
        // Nobody claims the waiter: at the deadline OnTimeout takes it back and the wait
        // returns false.
        Slot slot;
        bool resumed = true;
        scheduler.Start([&] { resumed = TC::SuspendTaskFor(&slot, 10ms); }).Join();
        // [/guide:timed-out]
        Check(!resumed && slot.tookBack == 1 && slot.tooLate == 0,
              "OnTimeout took the handle back: SuspendTaskFor returned false");
    }
    {
        // [guide:claimed]
        // A resumer claims the handle at once but resumes it only after 100 ms. The deadline
        // (30 ms) passes in between: OnTimeout finds the slot empty and answers false, and the
        // kernel waits for the resumer's ResumeTask. The wait returns true, after 100 ms.
        Slot slot;
        bool resumed = false;
        TC::JoinHandle waiter = scheduler.Start([&] { resumed = TC::SuspendTaskFor(&slot, 30ms); });
        std::thread resumer(
            [&]
            {
                while (!slot.Published() && slot.tookBack == 0)
                    std::this_thread::yield();
                if (const TC::SuspendedTask task = slot.Claim())
                {
                    std::this_thread::sleep_for(100ms);
                    TC::ResumeTask(task);
                }
            });
        waiter.Join();
        resumer.join();
        // [/guide:claimed]
        Check(resumed && slot.tookBack == 0 && slot.tooLate == 1,
              "a resumer had the handle: OnTimeout false, SuspendTaskFor true");
    }
    {
        // Many waits that are resumed in time: their deadlines are cancelled, not fired.
        AutoResetEvent_s ping, pong;
        int rounds = 0;
        const auto start = Clock::now();
        TC::JoinHandle ponger = scheduler.Start(
            [&]
            {
                for (int i = 0; i < 10000; ++i)
                    if (pong.Wait(1s))
                        ping.Set();
            });
        scheduler
            .Start(
                [&]
                {
                    for (int i = 0; i < 10000; ++i)
                    {
                        pong.Set();
                        rounds += ping.Wait(1s) ? 1 : 0;
                    }
                })
            .Join();
        ponger.Join();
        std::printf("  10000 timed round trips resumed in time: %.0f ns each\n",
                    MillisecondsSince(start) * 1e6 / 10000);
        Check(rounds == 10000, "timed waits resumed in time all return true");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
