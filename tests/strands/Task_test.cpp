// Task<T>, DetachedTask, SyncRun, ThisCoroStopToken and abandonment.

#include "StrandsTestSupport.h"

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;

namespace
{
Task<int> Answer()
{
    co_return 42;
}

Task<int> AddOne(int* started)
{
    ++*started;
    int value = co_await Answer();
    co_return value + 1;
}

Task<std::string> Throws()
{
    throw std::runtime_error("boom");
    co_return std::string();
}

Task<bool> ReadsToken()
{
    StopToken token = co_await ThisCoroStopToken();
    co_return token.stop_requested();
}

Task<bool> InheritsToken()
{
    co_return co_await ReadsToken();
}

struct NotDefaultConstructible
{
    explicit NotDefaultConstructible(int v) : value(v) {}
    int value;
};

Task<NotDefaultConstructible> MakeNdc()
{
    co_return NotDefaultConstructible(7);
}

// A chain whose bottom parks on an executor: every level holds a sentinel.
Task<void> ParkedLeaf(IExecutor* executor)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*executor};
}

Task<void> ParkedLevel(IExecutor* executor, int depth)
{
    FrameSentinel sentinel;
    if (depth == 0)
        co_await ParkedLeaf(executor);
    else
        co_await ParkedLevel(executor, depth - 1);
}

DetachedTask DetachedRoot(IExecutor* executor, int depth, int* finished)
{
    FrameSentinel sentinel;
    co_await ParkedLevel(executor, depth);
    ++*finished;
}
} // namespace

TEST_CASE("Task is lazy and yields its value through co_await", "[strands][task]")
{
    int started = 0;
    Task<int> task = AddOne(&started);
    CHECK(started == 0);
    CHECK_FALSE(task.Done());
    CHECK(SyncRun(std::move(task)) == 43);
    CHECK(started == 1);
}

TEST_CASE("Task result of an empty or unfinished task is refused with logic_error",
          "[strands][task]")
{
    Task<int> empty;
    CHECK(empty.Done()); // done() is also true for a task that owns no frame
    CHECK_THROWS_AS(empty.Result(), std::logic_error);

    Task<int> unfinished = Answer();
    CHECK_THROWS_AS(unfinished.Result(), std::logic_error);

    Task<int> driven = Answer();
    driven.GetHandle().resume();
    CHECK(driven.Result() == 42);

    Task<int> released = Answer();
    auto handle = released.Release();
    CHECK_THROWS_AS(released.Result(), std::logic_error);
    handle.destroy();

    CHECK_THROWS_AS(SyncRun(Task<int>()), std::logic_error);
    CHECK(SyncRun(MakeNdc()).value == 7);
}

TEST_CASE("Awaiting moves the frame out of the Task", "[strands][task]")
{
    auto body = []() -> Task<int> {
        Task<int> child = Answer();
        int value = co_await std::move(child);
        co_return value + (child.OwnsFrame() ? 100 : 0);
    };
    CHECK(SyncRun(body()) == 42);
}

TEST_CASE("An exception escaping a task reaches its awaiter", "[strands][task]")
{
    CHECK_THROWS_WITH(SyncRun(Throws()), "boom");
}

TEST_CASE("The stop token is inherited by awaited tasks", "[strands][task]")
{
    StopSource source;
    Task<bool> task = InheritsToken();
    task.SetStopToken(source.get_token());
    source.request_stop();
    CHECK(SyncRun(std::move(task)));
    CHECK_FALSE(SyncRun(InheritsToken()));
}

TEST_CASE("SyncRun refuses a task that parks; SyncRunWith takes the park back",
          "[strands][task]")
{
    TCTest::ManualExecutor executor;
    auto parks = [](IExecutor* ex) -> Task<int> {
        co_await ResumeOn{*ex};
        co_return 5;
    };
    // The frame SyncRun leaks on purpose is reclaimed here through the park it left behind:
    // run to its final suspension, then freed.
    auto reclaim = [&] {
        TC::ParkedWork leaked = executor.TakeOne();
        REQUIRE(leaked.handle);
        leaked.handle.resume();
        REQUIRE(leaked.handle.done());
        leaked.handle.destroy();
    };
    CHECK_THROWS_AS(SyncRun(parks(&executor)), std::logic_error);
    CHECK(executor.Pending() == 1);
    reclaim();
    CHECK(SyncRunWith(parks(&executor), [&] { executor.RunAll(); }) == 5);
    CHECK_THROWS_AS(SyncRunWith(parks(&executor), [] {}), std::logic_error);
    reclaim();
}

TEST_CASE("Abandoning a parked chain frees it from its unowned root", "[strands][task]")
{
    TCTest::ManualExecutor executor;
    int finished = 0;
    REQUIRE(FrameSentinel::live.load() == 0);
    DetachedRoot(&executor, 10, &finished);
    CHECK(FrameSentinel::live.load() == 13); // root, 11 levels, leaf
    REQUIRE(executor.Pending() == 1);
    executor.DropAll(); // abandon: destroys the DetachedTask root, which owns the rest
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(finished == 0);

    DetachedRoot(&executor, 3, &finished);
    executor.RunAll();
    CHECK(finished == 1);
    CHECK(FrameSentinel::live.load() == 0);
}

TEST_CASE("A chain owned by a Task is not freed by an executor dropping it", "[strands][task]")
{
    TCTest::ManualExecutor executor;
    {
        Task<void> owned = ParkedLevel(&executor, 2);
        owned.GetHandle().resume();
        CHECK(FrameSentinel::live.load() == 4);
        executor.DropAll(); // borrowed: nothing freed
        CHECK(FrameSentinel::live.load() == 4);
    } // the owner frees it
    CHECK(FrameSentinel::live.load() == 0);
}
