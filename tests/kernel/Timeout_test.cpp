// SuspendTaskFor: the timeout race in both outcomes, zero timeouts, early resumes, and the same
// for converted threads and coroutines.

#include "support/Detached.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Detached;
using namespace std::chrono_literals;
using TestSupport::Mailbox;

namespace
{
struct TimersOn
{
    TimersOn() { EnableTimers(); }
} timersOn;

// OnTimeout answers "a resumer already has it"; the test then plays that resumer.
struct ResumerHasIt final : ISuspendCallback
{
    std::atomic<SuspendedTask> published{nullptr};
    std::atomic<int> timeouts{0};
    std::atomic<bool> resumedYet{false};

    void OnSuspended(SuspendedTask task) noexcept override { published.store(task); }
    bool OnTimeout(SuspendedTask task) noexcept override
    {
        REQUIRE(task == published.load()); // called while still suspended, with its handle
        REQUIRE_FALSE(resumedYet.load());
        ++timeouts;
        return false;
    }
};

} // namespace

TEST_CASE("A timed wait that nobody ends returns false (OnTimeout took it back)")
{
    Mailbox box;
    Scheduler scheduler(1);
    bool got = true;
    int value = -1;
    const auto start = std::chrono::steady_clock::now();
    auto task = scheduler.Start([&] { got = box.Take(value, 20ms); });
    task.Join();
    REQUIRE_FALSE(got);
    REQUIRE(std::chrono::steady_clock::now() - start >= 20ms);
    // The mailbox still works afterwards: its waiter slot was cleared by OnTimeout.
    auto again = scheduler.Start([&] { got = box.Take(value, 5s); });
    box.Put(9);
    again.Join();
    REQUIRE(got);
    REQUIRE(value == 9);
}

TEST_CASE("OnTimeout returning false makes the wait last until the resumer's ResumeTask")
{
    Scheduler scheduler(1);
    // 5 ms: the timer thread fires; -5 ms: the task's worker, right after OnSuspended.
    const Duration timeout = GENERATE(Duration(5ms), Duration(-5ms));
    ResumerHasIt callback;
    std::atomic<int> result{-1};
    auto task = scheduler.Start([&] { result = SuspendTaskFor(&callback, timeout) ? 1 : 0; });
    while (callback.timeouts == 0)
        std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms); // the deadline passed long ago; the task must still wait
    REQUIRE(result == -1);
    callback.resumedYet = true;
    ResumeTask(callback.published.exchange(nullptr));
    task.Join();
    REQUIRE(result == 1);
    REQUIRE(callback.timeouts == 1);
}

TEST_CASE("A zero or negative timeout times out at once unless already resumed")
{
    Mailbox box;
    Scheduler scheduler(1);
    int value = 0;
    bool got = true;
    scheduler.Start([&] { got = box.Take(value, Duration::Zero()); }).Join();
    REQUIRE_FALSE(got);
    scheduler.Start([&] { got = box.Take(value, -5ms); }).Join();
    REQUIRE_FALSE(got);
    box.Put(3);
    scheduler.Start([&] { got = box.Take(value, Duration::Zero()); }).Join();
    REQUIRE(got);
    REQUIRE(value == 3);
    REQUIRE(Duration(-5ms) == Duration::Zero());
}

TEST_CASE("Infinite timeouts never expire")
{
    Mailbox box;
    Scheduler scheduler(1);
    int value = 0;
    bool got = false;
    auto task = scheduler.Start([&] { got = box.Take(value, Duration::Infinite()); });
    std::this_thread::sleep_for(10ms);
    box.Put(5);
    task.Join();
    REQUIRE(got);
    REQUIRE(value == 5);
}

TEST_CASE("Timed waits resumed early, many times, from another task")
{
    for (unsigned workers : {1u, 2u})
    {
        CAPTURE(workers);
        Mailbox requests, replies;
        Scheduler scheduler(workers);
        const int rounds = static_cast<int>(TestSupport::Scaled(200000));
        long sum = 0;
        int timeouts = 0;
        auto server = scheduler.Start([&] {
            for (int request; (request = requests.Take()) > 0;)
                replies.Put(request);
        });
        auto client = scheduler.Start([&] {
            for (int i = 1; i <= rounds; ++i)
            {
                requests.Put(i);
                int value = 0;
                if (!replies.Take(value, 10s))
                    ++timeouts;
                sum += value;
            }
            requests.Put(-1);
        });
        client.Join();
        server.Join();
        REQUIRE(timeouts == 0);
        REQUIRE(sum == static_cast<long>(rounds) * (rounds + 1) / 2);
    }
}

TEST_CASE("Timeouts racing resumes: every value arrives exactly once")
{
    // 20 us: the timer thread fires; zero: the waiting worker fires in the switch (ArmExpired),
    // racing the producer's Put between the publish and the take-back.
    const Duration timeout = GENERATE(Duration(std::chrono::microseconds(20)), Duration::Zero());
    Mailbox data, ack;
    Scheduler scheduler(2);
    const int values = static_cast<int>(TestSupport::Scaled(20000));
    long received = 0;
    long timeouts = 0;
    auto consumer = scheduler.Start([&] {
        int count = 0;
        while (count < values)
        {
            int value = 0;
            if (data.Take(value, timeout))
            {
                received += value;
                ++count;
                ack.Put(1);
            }
            else
                ++timeouts;
        }
    });
    std::thread producer([&] {
        for (int i = 1; i <= values; ++i)
        {
            data.Put(i);
            (void)ack.Take(); // converted thread wait
        }
    });
    producer.join();
    consumer.Join();
    REQUIRE(received == static_cast<long>(values) * (values + 1) / 2);
    INFO("timeouts seen: " << timeouts);
    SUCCEED();
}

TEST_CASE("A converted thread's timed wait times out and is resumed early")
{
    Mailbox box;
    int value = 0;
    REQUIRE_FALSE(box.Take(value, 10ms));
    std::thread other([&] {
        std::this_thread::sleep_for(5ms);
        box.Put(4);
    });
    REQUIRE(box.Take(value, 10s));
    REQUIRE(value == 4);
    other.join();
}

namespace
{
Detached TimedCoroutine(ISuspendCallback* callback, Duration timeout, std::atomic<int>* result)
{
    const bool resumed = co_await SuspendTaskForAsync(callback, timeout);
    *result = resumed ? 1 : 0;
}

struct SlotCallback final : ISuspendCallback
{
    std::atomic<SuspendedTask> slot{nullptr};
    void OnSuspended(SuspendedTask task) noexcept override { slot.store(task); }
    bool OnTimeout(SuspendedTask task) noexcept override
    {
        SuspendedTask expected = task;
        return slot.compare_exchange_strong(expected, nullptr);
    }
};
} // namespace

TEST_CASE("A huge finite timeout lets the timer thread sleep until it is due")
{
    // Before the fix, the timer thread slept with wait_for(deadline - now), which adds that span
    // to the clock's now: for a deadline near INT64_MAX it overflowed (undefined behaviour) into
    // the past, so wait_for returned at once and the timer thread spun on a core for as long as
    // the waiter waited.
    auto processCpu = []
    {
        timespec now{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
    };
    SlotCallback callback;
    std::atomic<int> result{-1};
    std::thread waiter(
        [&]
        { result = SuspendTaskFor(&callback, Duration::FromNanoseconds(INT64_MAX - 1)) ? 1 : 0; });
    while (!callback.slot.load())
        std::this_thread::sleep_for(1ms);
    // A short deadline wakes the timer thread; afterwards it sleeps until the huge one.
    Mailbox box;
    int value = 0;
    REQUIRE_FALSE(box.Take(value, 1ms));
    std::this_thread::sleep_for(20ms);
    const auto before = processCpu();
    std::this_thread::sleep_for(300ms);
    const auto used = processCpu() - before;
    ResumeTask(callback.slot.exchange(nullptr));
    waiter.join();
    REQUIRE(result == 1);
    INFO("CPU time used by an idle process: " << std::chrono::duration<double>(used).count()
                                              << " s");
    REQUIRE(used < 100ms);
}

TEST_CASE("A coroutine's timed wait: timeout and early resume, back on its executor")
{
    Scheduler scheduler(0);
    SlotCallback callback;
    std::atomic<int> result{-1};
    // Timeout: the coroutine starts on the host scheduler (its executor) and times out.
    {
        ExecutorScope scope(&scheduler);
        TimedCoroutine(&callback, 5ms, &result);
    }
    REQUIRE(result == -1);
    while (result == -1)
    {
        scheduler.WaitForWork(100ms);
        scheduler.RunPending();
    }
    REQUIRE(result == 0);

    // Early resume from another thread: it runs only when the host pumps.
    result = -1;
    {
        ExecutorScope scope(&scheduler);
        TimedCoroutine(&callback, 10s, &result);
    }
    std::thread resumer([&] { ResumeTask(callback.slot.exchange(nullptr)); });
    resumer.join();
    REQUIRE(result == -1);
    scheduler.WaitForWork(1s);
    scheduler.RunPending();
    REQUIRE(result == 1);
}

namespace
{
// A coroutine whose frame, once freed, is kept filled with a pattern instead of being given
// back, so that a later write into it -- by the timer thread, say -- shows. Its promise names
// itself the chain's unowned root, so an executor that drops its ParkedWork destroys it.
struct Droppable
{
    static constexpr unsigned char kFreed = 0xA5;
    struct Freed
    {
        unsigned char* bytes;
        std::size_t size;
    };
    static std::vector<Freed>& Quarantine()
    {
        static std::vector<Freed> freed;
        return freed;
    }
    static std::mutex& QuarantineLock() // frames are dropped on the timer thread too
    {
        static std::mutex lock;
        return lock;
    }

    struct promise_type
    {
        static void* operator new(std::size_t size) { return ::operator new(size); }
        static void operator delete(void* frame, std::size_t size) noexcept
        {
            std::memset(frame, kFreed, size);
            std::lock_guard lock(QuarantineLock());
            Quarantine().push_back({static_cast<unsigned char*>(frame), size});
        }
        Droppable get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        std::coroutine_handle<> UnownedRoot() const noexcept
        {
            return std::coroutine_handle<promise_type>::from_promise(
                const_cast<promise_type&>(*this));
        }
    };

    static std::size_t QuarantineSize()
    {
        std::lock_guard lock(QuarantineLock());
        return Quarantine().size();
    }

    // Frees the quarantined frames; false if any was written after it was freed.
    static bool ReleaseQuarantine()
    {
        std::lock_guard lock(QuarantineLock());
        bool intact = true;
        for (const Freed& frame : Quarantine())
        {
            for (std::size_t i = 0; i < frame.size; ++i)
                intact &= frame.bytes[i] == kFreed;
            ::operator delete(frame.bytes);
        }
        Quarantine().clear();
        return intact;
    }
};

Droppable TimedWaitToDrop(ISuspendCallback* callback, Duration timeout, std::atomic<int>* ran)
{
    (void)co_await SuspendTaskForAsync(callback, timeout);
    ++*ran; // never: the executor drops every resumption
}

// Drops whatever it is handed, as a closed strand does: at once, or (holding) when told to.
struct DroppingExecutor final : IExecutor
{
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<>) override { FAIL("a plain handle was submitted"); }
    void Submit(ParkedWork work) override
    {
        if (hold)
            held.push_back(work);
        else
            work.Abandon();
        // Counted last: a test that sees the count may read `held` and the quarantine at once.
        ++submitted;
    }
    void DropHeld()
    {
        for (ParkedWork& work : held)
            work.Abandon();
        held.clear();
    }
    bool hold = false;
    std::vector<ParkedWork> held;
    std::atomic<int> submitted{0};
};

struct ResumeInOnSuspended final : ISuspendCallback
{
    void OnSuspended(SuspendedTask task) noexcept override { ResumeTask(task); }
};
} // namespace

TEST_CASE("A timed coroutine wait whose executor drops the resumed frame leaves no deadline behind")
{
    // The deadline's node lives in the frame. Before the fix, a resume handed the coroutine to
    // its executor with the node still in the timer heap; an executor that dropped the frame
    // (a closed strand) left the timer thread to write into freed memory at the deadline.
    DroppingExecutor executor;
    std::atomic<int> ran{0};
    const auto deadline = 20ms;
    std::size_t frames = 1;
    // A resumer descheduled past the deadline (a loaded machine) finds the handle taken back:
    // then the timer thread submits the frame instead, and the invariants below still hold.
    auto awaitSubmitted = [&](int count)
    {
        const auto giveUp = std::chrono::steady_clock::now() + 60s;
        while (executor.submitted < count && std::chrono::steady_clock::now() < giveUp)
            std::this_thread::sleep_for(1ms);
        REQUIRE(executor.submitted == count);
    };
    SECTION("resumed after the deadline was armed, dropped at once")
    {
        SlotCallback callback;
        {
            ExecutorScope scope(&executor);
            TimedWaitToDrop(&callback, deadline, &ran);
        }
        std::thread(
            [&]
            {
                if (SuspendedTask task = callback.slot.exchange(nullptr))
                    ResumeTask(task);
            })
            .join();
        awaitSubmitted(1);
    }
    SECTION("resumed and queued, dropped later (a strand closed with it queued)")
    {
        executor.hold = true;
        SlotCallback callback;
        {
            ExecutorScope scope(&executor);
            TimedWaitToDrop(&callback, deadline, &ran);
        }
        if (SuspendedTask task = callback.slot.exchange(nullptr))
            ResumeTask(task);
        awaitSubmitted(1);
        executor.DropHeld();
    }
    SECTION("resumed inside OnSuspended, before the deadline was armed")
    {
        ResumeInOnSuspended callback;
        {
            ExecutorScope scope(&executor);
            TimedWaitToDrop(&callback, deadline, &ran);
        }
        REQUIRE(executor.submitted == 1);
    }
    SECTION("resumes racing the deadline: every wait is submitted once, by whoever holds it last")
    {
        constexpr int kWaits = 200;
        frames = kWaits;
        std::vector<std::unique_ptr<SlotCallback>> callbacks;
        for (int i = 0; i < kWaits; ++i)
        {
            callbacks.push_back(std::make_unique<SlotCallback>());
            ExecutorScope scope(&executor);
            TimedWaitToDrop(callbacks.back().get(), std::chrono::microseconds(50 * (i % 40)), &ran);
        }
        for (auto& callback : callbacks)
            if (SuspendedTask task = callback->slot.exchange(nullptr))
                ResumeTask(task); // a resumer won; else OnTimeout took it back
        awaitSubmitted(kWaits);
    }
    std::this_thread::sleep_for(deadline + 30ms); // every deadline of this test has passed
    REQUIRE(ran == 0);
    REQUIRE(Droppable::QuarantineSize() == frames); // each frame was dropped, none resumed
    REQUIRE(Droppable::ReleaseQuarantine());
}

namespace
{
// Records where OnTimeout ran, and takes the waiter back.
struct WhereTimedOut final : ISuspendCallback
{
    std::atomic<SuspendedTask> published{nullptr};
    std::atomic<int> timeouts{0};
    std::thread::id timeoutThread;

    void OnSuspended(SuspendedTask task) noexcept override { published.store(task); }
    bool OnTimeout(SuspendedTask task) noexcept override
    {
        timeoutThread = std::this_thread::get_id();
        ++timeouts;
        SuspendedTask expected = task;
        return published.compare_exchange_strong(expected, nullptr);
    }
};
} // namespace

TEST_CASE("A zero or negative timeout is fired by the waiting thread, not the timer thread")
{
    // Through the timer thread a deadline that had already passed took about 25 us to fire; the
    // arming thread now fires it (Timers.cpp, ArmExpired). A coroutine's still goes through the
    // timer thread, since its arming runs inside await_suspend.
    SECTION("a converted thread")
    {
        WhereTimedOut callback;
        REQUIRE_FALSE(SuspendTaskFor(&callback, Duration::Zero()));
        REQUIRE(callback.timeouts == 1);
        REQUIRE(callback.timeoutThread == std::this_thread::get_id());
        REQUIRE_FALSE(SuspendTaskFor(&callback, -1ms));
        REQUIRE(callback.timeouts == 2);
    }
    SECTION("a task, on its worker thread")
    {
        Scheduler scheduler(1);
        WhereTimedOut callback;
        std::thread::id taskThread;
        bool resumed = true;
        scheduler
            .Start(
                [&]
                {
                    taskThread = std::this_thread::get_id();
                    resumed = SuspendTaskFor(&callback, Duration::Zero());
                })
            .Join();
        REQUIRE_FALSE(resumed);
        REQUIRE(callback.timeouts == 1);
        REQUIRE(callback.timeoutThread == taskThread);
    }
    SECTION("a resume during OnSuspended wins: no OnTimeout")
    {
        ResumeInOnSuspended callback;
        REQUIRE(SuspendTaskFor(&callback, Duration::Zero()));
        Scheduler scheduler(1);
        bool resumed = false;
        scheduler.Start([&] { resumed = SuspendTaskFor(&callback, Duration::Zero()); }).Join();
        REQUIRE(resumed);
    }
    SECTION("a coroutine with no executor: the timer thread")
    {
        WhereTimedOut callback;
        std::atomic<int> result{-1};
        TimedCoroutine(&callback, Duration::Zero(), &result);
        while (result.load() == -1)
            std::this_thread::sleep_for(1ms);
        REQUIRE(result == 0);
        REQUIRE(callback.timeoutThread != std::this_thread::get_id());
    }
}
