// WaitForResult / WaitForResultAsync: an attempt made waitable from a thread, a task and a
// coroutine -- the value, a hand-off, a timeout, a stop (explicit, and a Task's own token).

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/WaitForResult.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using TC::WaitResult;
using TC::WaitStatus;

namespace
{
// The smallest primitive: a deque under a mutex, its waiters on a WaitQueue.
struct IntQueue
{
    std::mutex mutex;
    std::deque<int> items;
    TC::WaitQueue notEmpty;

    std::optional<int> TryPop() noexcept
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (items.empty())
            return std::nullopt;
        const int item = items.front();
        items.pop_front();
        return item;
    }
    void Push(int item)
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            items.push_back(item);
        }
        notEmpty.ResumeOne();
    }
    WaitResult<int> Pop(TC::Duration timeout = TC::Duration::Infinite(), const TC::Strands::StopToken& stop = {})
    {
        return TC::WaitForResult(notEmpty, [this]() noexcept { return TryPop(); }, timeout, stop);
    }
    auto PopAsync(TC::Duration timeout = TC::Duration::Infinite(), TC::Strands::StopToken stop = {})
    {
        return TC::WaitForResultAsync(notEmpty, [this]() noexcept { return TryPop(); }, timeout,
                                      std::move(stop));
    }
};

bool Eventually(auto done)
{
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done())
    {
        if (std::chrono::steady_clock::now() > deadline)
            return done();
        std::this_thread::sleep_for(100us);
    }
    return true;
}

TC::Strands::DetachedTask PopInCoroutine(TC::Scheduler& scheduler, IntQueue& queue, TC::Duration timeout,
                                std::optional<WaitResult<int>>& out, std::atomic<bool>& done)
{
    co_await scheduler.Schedule();
    out.emplace(co_await queue.PopAsync(timeout));
    done.store(true);
}

TC::Strands::Task<WaitResult<int>> PopTask(IntQueue& queue)
{
    co_return co_await queue.PopAsync(); // no token given: the task's own
}

} // namespace

TEST_CASE("WaitForResult waits for the attempt's value, from a thread and a task", "[waitforresult]")
{
    TC::EnableTimers();
    IntQueue queue;
    queue.Push(1);
    WaitResult<int> first = queue.Pop(); // there at once
    REQUIRE(first.HasValue());
    CHECK(*first == 1);

    std::optional<WaitResult<int>> fromThread;
    std::thread consumer([&] { fromThread.emplace(queue.Pop()); });
    REQUIRE(Eventually([&] { return queue.notEmpty.HasWaiters(); }));
    queue.Push(2);
    consumer.join();
    REQUIRE(fromThread->HasValue());
    CHECK(**fromThread == 2);

    TC::Scheduler scheduler(1);
    std::optional<WaitResult<int>> fromTask;
    auto task = scheduler.Start([&] { fromTask.emplace(queue.Pop()); });
    REQUIRE(Eventually([&] { return queue.notEmpty.HasWaiters(); }));
    int value = 3;
    CHECK(TC::HandOffResult(queue.notEmpty, value)); // straight into the waiter's result
    task.Join();
    REQUIRE(fromTask->HasValue());
    CHECK(**fromTask == 3);
    CHECK(queue.items.empty());
}

TEST_CASE("WaitForResult gives up after its timeout, or on a stop", "[waitforresult]")
{
    TC::EnableTimers();
    IntQueue queue;
    const auto before = std::chrono::steady_clock::now();
    WaitResult<int> late = queue.Pop(20ms);
    CHECK(std::chrono::steady_clock::now() - before >= 20ms);
    CHECK_FALSE(late.HasValue());
    CHECK(late.Status() == WaitStatus::TimedOut);

    TC::Strands::StopSource source;
    std::optional<WaitResult<int>> result;
    std::thread consumer([&] { result.emplace(queue.Pop(TC::Duration::Infinite(), source.get_token())); });
    REQUIRE(Eventually([&] { return queue.notEmpty.HasWaiters(); }));
    source.request_stop();
    consumer.join();
    CHECK(result->Status() == WaitStatus::Cancelled);
    CHECK_FALSE(queue.notEmpty.HasWaiters());
}

TEST_CASE("WaitForResultAsync: a coroutine's value, timeout and its task's stop token",
          "[waitforresult]")
{
    TC::EnableTimers();
    TC::Scheduler scheduler(2);
    IntQueue queue;
    std::optional<WaitResult<int>> result;
    std::atomic<bool> done{false};
    PopInCoroutine(scheduler, queue, TC::Duration::Infinite(), result, done);
    REQUIRE(Eventually([&] { return queue.notEmpty.HasWaiters(); }));
    queue.Push(7);
    REQUIRE(Eventually([&] { return done.load(); }));
    REQUIRE(result->HasValue());
    CHECK(**result == 7);

    done = false;
    PopInCoroutine(scheduler, queue, 10ms, result, done);
    REQUIRE(Eventually([&] { return done.load(); }));
    CHECK(result->Status() == WaitStatus::TimedOut);

    // A root task with no executor, given a token: parks on the queue, and the stop resumes it
    // inline, cancelled.
    TC::Strands::StopSource source;
    auto task = PopTask(queue);
    task.SetStopToken(source.get_token());
    task.GetHandle().resume();
    REQUIRE(queue.notEmpty.HasWaiters());
    source.request_stop();
    REQUIRE(task.Done());
    CHECK(task.Result().Status() == WaitStatus::Cancelled);
}

TEST_CASE("HandOffDone completes an operation with no value for the oldest waiter",
          "[waitforresult]")
{
    // A one-permit gate: the attempt takes the permit; HandOffDone passes one over directly,
    // so the permit never becomes visible to a barging TryTake.
    std::atomic<bool> permit{false};
    TC::WaitQueue waiting;
    auto tryTake = [&]() noexcept { return permit.exchange(false); };
    CHECK_FALSE(TC::HandOffDone(waiting)); // nobody waits: nothing done
    std::optional<WaitResult<void>> result;
    std::thread waiter([&] { result.emplace(TC::WaitForResult(waiting, tryTake)); });
    REQUIRE(Eventually([&] { return waiting.HasWaiters(); }));
    CHECK(TC::HandOffDone(waiting));
    waiter.join();
    CHECK(result->HasValue());
    CHECK_FALSE(permit.load()); // handed over, never published
}
