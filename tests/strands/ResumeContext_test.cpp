// The resume context: a coroutine on a strand that waits on a Latch, a Mailbox or an AsyncQueue
// completed from another thread comes back on that strand; AsyncQueue's contract.

#include "StrandsTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Latch.h>
#include <TC/Synchronization/Mailbox.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;
using TCTest::ManualExecutor;

namespace
{
struct Observed
{
    std::atomic<int> here{0};
    std::atomic<int> done{0};
};

DetachedTask WaitOnLatch(Strand* strand, Synchronization::Latch* latch, Observed* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    co_await latch->WaitAsync();
    if (strand->RunningHere())
        seen->here.fetch_add(1);
    seen->done.fetch_add(1);
}

DetachedTask TakeFromMailbox(Strand* strand, Synchronization::Mailbox<int>* box, Observed* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    int value = co_await box->TakeAsync();
    if (strand->RunningHere() && value == 17)
        seen->here.fetch_add(1);
    seen->done.fetch_add(1);
}

DetachedTask PopFromQueue(Strand* strand, AsyncQueue<int>* queue, Observed* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    std::optional<int> value = co_await queue->Pop();
    if (strand->RunningHere() && value == 5)
        seen->here.fetch_add(1);
    seen->done.fetch_add(1);
}

void WaitFor(const std::atomic<int>& counter, int expected)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (counter.load() != expected && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// Whether `primitive` has a suspended waiter within 10 s: the resume from another thread is what
// these tests are about, so they wait for the coroutine to be parked instead of sleeping on it.
template <class Primitive>
bool WaitSuspended(const Primitive& primitive)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!primitive.IsSuspended() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    return primitive.IsSuspended();
}

Task<std::optional<int>> PopOnce(AsyncQueue<int>* queue)
{
    co_return co_await queue->Pop();
}
} // namespace

TEST_CASE("A coroutine on a strand resumed by a Latch from another thread comes back there",
          "[strands][resume]")
{
    Scheduler scheduler(2u);
    Observed seen;
    {
        Strand strand(scheduler);
        Synchronization::Latch latch(1);
        WaitOnLatch(&strand, &latch, &seen);
        REQUIRE(WaitSuspended(latch));
        std::thread([&] { latch.CountDown(); }).join();
        WaitFor(seen.done, 1);
        strand.WaitIdle();
    }
    CHECK(seen.done.load() == 1);
    CHECK(seen.here.load() == 1);
}

TEST_CASE("A coroutine on a strand resumed by a Mailbox from another thread comes back there",
          "[strands][resume]")
{
    Scheduler scheduler(2u);
    Observed seen;
    {
        Strand strand(scheduler);
        Synchronization::Mailbox<int> box;
        TakeFromMailbox(&strand, &box, &seen);
        REQUIRE(WaitSuspended(box));
        std::thread([&] { box.Put(17); }).join();
        WaitFor(seen.done, 1);
        strand.WaitIdle();
    }
    CHECK(seen.done.load() == 1);
    CHECK(seen.here.load() == 1);
}

TEST_CASE("A coroutine on a strand resumed by an AsyncQueue from another thread comes back "
          "there",
          "[strands][resume][asyncqueue]")
{
    Scheduler scheduler(2u);
    ManualExecutor fallback; // must not be used: the strand is current at the park
    Observed seen;
    {
        Strand strand(scheduler);
        AsyncQueue<int> queue(fallback);
        PopFromQueue(&strand, &queue, &seen);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!queue.HasWaiter() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        REQUIRE(queue.HasWaiter());
        std::thread([&] { queue.Push(5); }).join();
        WaitFor(seen.done, 1);
        strand.WaitIdle();
        CHECK_FALSE(queue.HasWaiter());
    }
    CHECK(fallback.Submitted() == 0);
    CHECK(seen.done.load() == 1);
    CHECK(seen.here.load() == 1);
}

TEST_CASE("AsyncQueue: bounded overflow policies", "[strands][asyncqueue]")
{
    ManualExecutor executor;
    AsyncQueue<int> oldest(executor, AsyncQueueOptions{2, Overflow::DropOldest});
    CHECK(oldest.Push(1).outcome == PushOutcome::Admitted);
    CHECK(oldest.Push(2).outcome == PushOutcome::Admitted);
    PushResult third = oldest.Push(3);
    CHECK(third.outcome == PushOutcome::Admitted);
    CHECK(third.displaced == 1);
    CHECK(SyncRun(PopOnce(&oldest)) == std::optional<int>(2));

    AsyncQueue<int> newest(executor, AsyncQueueOptions{1, Overflow::DropNewest});
    CHECK(newest.Push(1).outcome == PushOutcome::Admitted);
    CHECK(newest.Push(2).outcome == PushOutcome::Refused);
    CHECK(SyncRun(PopOnce(&newest)) == std::optional<int>(1));
    newest.Close();
    CHECK(newest.Push(3).outcome == PushOutcome::Closed);
    CHECK(SyncRun(PopOnce(&newest)) == std::nullopt);
}

// A value whose move throws while `armed`: the one way a Push can fail after its checks.
struct FragileValue
{
    static inline bool armed = false;
    int value = 0;
    explicit FragileValue(int v) noexcept : value(v) {}
    FragileValue(FragileValue&& other) : value(other.value)
    {
        if (armed)
            throw std::runtime_error("FragileValue: move failed");
    }
    FragileValue& operator=(FragileValue&&) = delete;
};

Task<std::optional<int>> PopFragile(AsyncQueue<FragileValue>* queue)
{
    std::optional<FragileValue> item = co_await queue->Pop();
    co_return item ? std::optional<int>(item->value) : std::nullopt;
}

TEST_CASE("AsyncQueue: a DropOldest Push that throws displaces nothing", "[strands][asyncqueue]")
{
    ManualExecutor executor;
    AsyncQueue<FragileValue> queue(executor, AsyncQueueOptions{2, Overflow::DropOldest});
    CHECK(queue.Push(FragileValue(1)).outcome == PushOutcome::Admitted);
    CHECK(queue.Push(FragileValue(2)).outcome == PushOutcome::Admitted);
    FragileValue::armed = true;
    CHECK_THROWS_AS(queue.Push(FragileValue(3)), std::runtime_error);
    FragileValue::armed = false;
    // Both items are still there, in order: the failed Push took nothing to make room.
    CHECK(SyncRun(PopFragile(&queue)) == std::optional<int>(1));
    CHECK(SyncRun(PopFragile(&queue)) == std::optional<int>(2));
    queue.Close();
    CHECK(SyncRun(PopFragile(&queue)) == std::nullopt);
}

TEST_CASE("AsyncQueue: Push and Close never resume inline; outside scopes the queue's executor "
          "is used",
          "[strands][asyncqueue]")
{
    ManualExecutor executor;
    AsyncQueue<int> queue(executor);
    Task<std::optional<int>> pop = PopOnce(&queue);
    pop.GetHandle().resume();
    REQUIRE(queue.HasWaiter());
    queue.Push(9);
    CHECK_FALSE(pop.Done()); // handed to the executor, not resumed here
    executor.RunAll();
    REQUIRE(pop.Done());
    CHECK(pop.Result() == std::optional<int>(9));

    Task<std::optional<int>> closed = PopOnce(&queue);
    closed.GetHandle().resume();
    queue.Close();
    CHECK_FALSE(closed.Done());
    executor.RunAll();
    CHECK(closed.Result() == std::nullopt);
}

TEST_CASE("AsyncQueue: Pop is stop-aware, but an item or a close answers first",
          "[strands][asyncqueue]")
{
    ManualExecutor executor;
    AsyncQueue<int> queue(executor);
    StopSource source;
    Task<std::optional<int>> pop = PopOnce(&queue);
    pop.SetStopToken(source.get_token());
    pop.GetHandle().resume();
    REQUIRE(queue.HasWaiter());
    source.request_stop();
    CHECK_FALSE(queue.HasWaiter());
    CHECK_FALSE(pop.Done()); // handed to the executor even from the stop callback
    executor.RunAll();
    CHECK_THROWS_AS(pop.Result(), OperationCancelled);

    queue.Push(4); // queued before the (already requested) stop is observed
    Task<std::optional<int>> again = PopOnce(&queue);
    again.SetStopToken(source.get_token());
    again.GetHandle().resume();
    REQUIRE(again.Done());
    CHECK(again.Result() == std::optional<int>(4));
}

TEST_CASE("A strand's state outlives the Strand across a park: the late wake-up is dropped",
          "[strands][resume][asyncqueue]")
{
    ManualExecutor base;
    ManualExecutor fallback;
    Observed seen;
    AsyncQueue<int> queue(fallback);
    {
        Strand strand(base);
        PopFromQueue(&strand, &queue, &seen);
        base.RunAll();
        REQUIRE(queue.HasWaiter());
        CHECK(FrameSentinel::live.load() == 1);
    } // the strand goes first; the parked coroutine holds its state
    queue.Push(5); // hands the consumer to the closed state, which drops it: chain freed
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(seen.done.load() == 0);
    CHECK(base.Pending() == 0);
}
