// Future/Promise: every Then shape, flattening, exceptions, broken promises, resolve after the
// Future is gone (run under ASan: nothing may dangle or leak), and waits from a task, a converted
// thread and a coroutine.

#include "EmbeddingTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::Promise;
using TC::Testing::Detached;

namespace
{
// Counts live instances so a test can prove a value was dropped (or never built).
struct Tracked
{
    static inline std::atomic<int> live{0};
    static inline std::atomic<int> built{0};
    int value;
    explicit Tracked(int v) : value(v)
    {
        ++live;
        ++built;
    }
    Tracked(Tracked&& other) noexcept : value(other.value) { ++live; }
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    ~Tracked() { --live; }
};

enum class Order
{
    AttachThenResolve,
    ResolveThenAttach,
};

bool IsBrokenPromise(const std::future_error& e)
{
    return e.code() == std::make_error_code(std::future_errc::broken_promise);
}
} // namespace

TEST_CASE("Then: T -> U", "[future][then]")
{
    const Order order = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    auto [future, promise] = MakeFuture<int>();
    if (order == Order::ResolveThenAttach)
        promise.SetValue(21);
    Future<std::string> next = future.Then([](int v) { return std::to_string(v * 2); });
    CHECK_FALSE(future.Valid());
    if (order == Order::AttachThenResolve)
    {
        CHECK_FALSE(next.IsReady());
        promise.SetValue(21);
    }
    REQUIRE(next.IsReady());
    CHECK(next.Wait() == "42");
    CHECK_FALSE(next.Valid());
}

TEST_CASE("Then: void -> U", "[future][then]")
{
    const Order order = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    auto [future, promise] = MakeFuture<void>();
    if (order == Order::ResolveThenAttach)
        promise.SetValue();
    Future<int> next = future.Then([] { return 7; });
    if (order == Order::AttachThenResolve)
        promise.SetValue();
    CHECK(next.Wait() == 7);
}

TEST_CASE("Then: T -> void", "[future][then]")
{
    const Order order = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    int seen = 0;
    auto [future, promise] = MakeFuture<int>();
    if (order == Order::ResolveThenAttach)
        promise.SetValue(5);
    Future<void> next = future.Then([&seen](int v) { seen = v; });
    static_assert(std::is_same_v<decltype(next.Wait()), void>);
    if (order == Order::AttachThenResolve)
    {
        CHECK(seen == 0);
        promise.SetValue(5);
    }
    next.Wait();
    CHECK(seen == 5);
}

TEST_CASE("Then: void -> void", "[future][then]")
{
    const Order order = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    int calls = 0;
    auto [future, promise] = MakeFuture<void>();
    if (order == Order::ResolveThenAttach)
        promise.SetValue();
    Future<void> next = future.Then([&calls] { ++calls; });
    if (order == Order::AttachThenResolve)
        promise.SetValue();
    next.Wait();
    CHECK(calls == 1);
}

TEST_CASE("Then flattens a returned Future: T -> Future<U>", "[future][then]")
{
    const Order outer = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    const Order inner = GENERATE(Order::AttachThenResolve, Order::ResolveThenAttach);
    Promise<std::string> innerPromise;
    Future<std::string> innerFuture = innerPromise.GetFuture();
    if (inner == Order::ResolveThenAttach)
        innerPromise.SetValue("inner");
    auto [future, promise] = MakeFuture<int>();
    if (outer == Order::ResolveThenAttach)
        promise.SetValue(3);
    Future<std::string> next = future.Then(
        [&innerFuture](int v)
        {
            CHECK(v == 3);
            return std::move(innerFuture);
        });
    if (outer == Order::AttachThenResolve)
        promise.SetValue(3);
    if (inner == Order::AttachThenResolve)
    {
        CHECK_FALSE(next.IsReady());
        innerPromise.SetValue("inner");
    }
    REQUIRE(next.IsReady());
    CHECK(next.Wait() == "inner");
}

TEST_CASE("Then flattens: void -> Future<void>, and exceptions from the inner future",
          "[future][then]")
{
    Promise<void> innerPromise;
    Future<void> innerFuture = innerPromise.GetFuture();
    auto [future, promise] = MakeFuture<void>();
    Future<void> next = future.Then([&innerFuture] { return std::move(innerFuture); });
    static_assert(std::is_same_v<decltype(next), Future<void>>);
    promise.SetValue();
    CHECK_FALSE(next.IsReady());
    innerPromise.SetException(std::make_exception_ptr(std::runtime_error("inner failed")));
    CHECK_THROWS_WITH(next.Wait(), "inner failed");
}

TEST_CASE("Then returning an empty Future gives no_state", "[future][then]")
{
    auto [future, promise] = MakeFuture<int>();
    Future<int> next = future.Then([](int) { return Future<int>(); });
    promise.SetValue(1);
    try
    {
        next.Wait();
        FAIL("no exception");
    }
    catch (const std::future_error& e)
    {
        CHECK(e.code() == std::make_error_code(std::future_errc::no_state));
    }
}

TEST_CASE("Then passes exceptions on and catches what f throws", "[future][then][exception]")
{
    SECTION("a stored exception skips f")
    {
        auto [future, promise] = MakeFuture<int>();
        bool called = false;
        Future<int> next = future.Then(
            [&called](int v)
            {
                called = true;
                return v;
            });
        promise.SetException(std::make_exception_ptr(std::logic_error("boom")));
        CHECK_THROWS_AS(next.Wait(), std::logic_error);
        CHECK_FALSE(called);
    }
    SECTION("f throws")
    {
        auto [future, promise] = MakeFuture<void>();
        Future<int> next = future.Then([]() -> int { throw std::runtime_error("from f"); });
        promise.SetValue();
        CHECK_THROWS_WITH(next.Wait(), "from f");
    }
    SECTION("a broken promise passes through a chain")
    {
        Future<int> next;
        {
            Promise<int> promise;
            next = promise.GetFuture()
                       .Then([](int v) { return v + 1; })
                       .Then([](int v) { return v * 2; });
        }
        try
        {
            next.Wait();
            FAIL("no exception");
        }
        catch (const std::future_error& e)
        {
            CHECK(IsBrokenPromise(e));
        }
    }
}

TEST_CASE("a long chain resolves in a loop, not by recursion", "[future][then]")
{
    // Run on a small task stack: 20 000 nested continuation calls would overflow it.
    TC::SchedulerOptions options;
    options.workerCount = 1;
    options.stackSize = TC::StackSize::Small;
    TC::Scheduler scheduler(options);
    auto [future, promise] = MakeFuture<int>();
    constexpr int kLength = 20000;
    Future<int> tail = std::move(future);
    Promise<int> flattenInner;
    Future<int> flattenFuture = flattenInner.GetFuture();
    tail = tail.Then(
        [&flattenFuture](int v)
        {
            (void)v;
            return std::move(flattenFuture);
        });
    for (int i = 0; i < kLength; ++i)
        tail = tail.Then([](int v) { return v + 1; });
    promise.SetValue(0);
    scheduler.Start([&flattenInner] { flattenInner.SetValue(100); }).Join();
    CHECK(tail.Wait() == 100 + kLength);
}

TEST_CASE("Wait rethrows SetException and reports a broken promise", "[future][exception]")
{
    SECTION("SetException")
    {
        auto [future, promise] = MakeFuture<int>();
        promise.SetException(std::make_exception_ptr(std::out_of_range("range")));
        CHECK_THROWS_AS(future.Wait(), std::out_of_range);
        CHECK_FALSE(future.Valid());
    }
    SECTION("broken promise")
    {
        Future<void> future;
        {
            Promise<void> promise;
            future = promise.GetFuture();
        }
        REQUIRE(future.IsReady());
        try
        {
            future.Wait();
            FAIL("no exception");
        }
        catch (const std::future_error& e)
        {
            CHECK(IsBrokenPromise(e));
        }
    }
    SECTION("broken promise wakes a waiting thread")
    {
        auto [future, promise] = MakeFuture<int>();
        std::thread breaker(
            [p = std::move(promise)]() mutable
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                Promise<int> gone = std::move(p);
            });
        CHECK_THROWS_AS(future.Wait(), std::future_error);
        breaker.join();
    }
}

TEST_CASE("Promise misuse throws future_error", "[future]")
{
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    CHECK_THROWS_AS(promise.GetFuture(), std::future_error);
    promise.SetValue(1);
    CHECK_FALSE(promise.Valid());
    CHECK_THROWS_AS(promise.SetValue(2), std::future_error);
    CHECK_THROWS_AS(promise.SetException(nullptr), std::future_error);
    CHECK(future.Wait() == 1);
    CHECK_THROWS_AS(future.Wait(), std::future_error); // consumed
    Future<int> empty;
    CHECK_THROWS_AS(empty.Then([](int v) { return v; }), std::future_error);
}

TEST_CASE("SetException with a null exception_ptr is refused; the Promise stays unresolved",
          "[future][exception]")
{
    // Before: it resolved the Future with neither a value nor an exception, and Wait moved a
    // value out of an empty optional (a Then passed one to f).
    Promise<std::string> promise;
    Future<std::string> future = promise.GetFuture();
    REQUIRE_THROWS_AS(promise.SetException(std::exception_ptr()), std::invalid_argument);
    CHECK(promise.Valid());
    CHECK_FALSE(future.IsReady());
    promise.SetValue("kept");
    CHECK(future.Wait() == "kept");
    CHECK_THROWS_AS(Future<std::string>::FromException(nullptr), std::invalid_argument);
}

TEST_CASE("a Promise resolved before GetFuture keeps its value", "[future]")
{
    Promise<std::unique_ptr<int>> promise;
    promise.SetValue(std::make_unique<int>(9));
    Future<std::unique_ptr<int>> future = promise.GetFuture();
    REQUIRE(future.IsReady());
    CHECK(*future.Wait() == 9);

    Tracked::live = 0;
    {
        Promise<Tracked> unclaimed;
        unclaimed.SetValue(1);
        CHECK(Tracked::live == 1);
    }
    CHECK(Tracked::live == 0);
}

TEST_CASE("resolving after the Future is gone drops the value", "[future][lifetime]")
{
    Tracked::live = 0;
    Tracked::built = 0;
    SECTION("destroyed before resolve: the value is never built")
    {
        Promise<Tracked> promise;
        {
            Future<Tracked> future = promise.GetFuture();
        }
        promise.SetValue(5);
        CHECK(Tracked::built == 0);
        CHECK_FALSE(promise.Valid());
    }
    SECTION("destroyed after resolve: the value is destroyed with it")
    {
        Promise<Tracked> promise;
        Future<Tracked> future = promise.GetFuture();
        promise.SetValue(5);
        CHECK(Tracked::live == 1);
        future = Future<Tracked>();
        CHECK(Tracked::live == 0);
    }
    SECTION("SetException and a broken promise after the Future is gone")
    {
        {
            Promise<Tracked> promise;
            (void)promise.GetFuture();
            promise.SetException(std::make_exception_ptr(std::runtime_error("x")));
        }
        {
            Promise<Tracked> promise;
            (void)promise.GetFuture();
        }
    }
    SECTION("a Then whose result nobody keeps still runs, and frees everything")
    {
        int calls = 0;
        auto [future, promise] = MakeFuture<Tracked>();
        (void)future.Then(
            [&calls](Tracked t)
            {
                ++calls;
                return Tracked(t.value + 1);
            });
        promise.SetValue(1);
        CHECK(calls == 1);
    }
    SECTION("resolved from another thread while the Future is destroyed")
    {
        const std::uint64_t rounds = TC::Testing::Scaled(200000);
        std::vector<Promise<Tracked>> promises;
        std::vector<Future<Tracked>> futures;
        for (std::uint64_t round = 0; round < rounds; round += 1000)
        {
            promises.clear();
            futures.clear();
            for (int i = 0; i < 1000; ++i)
            {
                promises.emplace_back();
                futures.push_back(promises.back().GetFuture());
            }
            std::atomic<bool> go{false};
            std::thread resolver(
                [&]
                {
                    while (!go.load(std::memory_order_acquire))
                    {
                    }
                    for (auto& p : promises)
                        p.SetValue(1);
                });
            go.store(true, std::memory_order_release);
            for (auto& f : futures)
                f = Future<Tracked>();
            resolver.join();
        }
        promises.clear();
    }
    CHECK(Tracked::live == 0);
}

TEST_CASE("Wait from a task, resolved by another task", "[future][wait]")
{
    TC::Scheduler scheduler(2);
    auto [future, promise] = MakeFuture<int>();
    std::atomic<int> got{0};
    auto waiter = scheduler.Start([&got, f = std::move(future)]() mutable { got = f.Wait(); });
    auto resolver = scheduler.Start(
        [p = std::move(promise)]() mutable
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            p.SetValue(17);
        });
    waiter.Join();
    resolver.Join();
    CHECK(got == 17);
}

TEST_CASE("Wait from a converted thread, resolved by a task", "[future][wait]")
{
    TC::Scheduler scheduler(1);
    auto [future, promise] = MakeFuture<std::string>();
    auto resolver = scheduler.Start(
        [p = std::move(promise)]() mutable
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            p.SetValue("from a task");
        });
    CHECK(future.Wait() == "from a task");
    resolver.Join();
}

TEST_CASE("co_await from a coroutine on a worker scheduler", "[future][coroutine]")
{
    TC::Scheduler scheduler(2);
    auto [future, promise] = MakeFuture<int>();
    Promise<int> done;
    Future<int> doneFuture = done.GetFuture();
    std::atomic<bool> onWorker{false};
    [](TC::Scheduler& s, Future<int> f, Promise<int> out, std::atomic<bool>& flag) -> Detached
    {
        co_await s.Schedule();
        const int v = co_await f;
        flag = TC::Scheduler::Current() == &s;
        out.SetValue(v + 1);
    }(scheduler, std::move(future), std::move(done), onWorker);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    promise.SetValue(41);
    CHECK(doneFuture.Wait() == 42);
    CHECK(onWorker);
}

TEST_CASE("co_await a ready Future and a failed one", "[future][coroutine]")
{
    int got = 0;
    bool threw = false;
    [](int& out, bool& failed) -> Detached
    {
        out = co_await Future<int>::FromValue(3);
        try
        {
            co_await Future<void>::FromException(std::make_exception_ptr(std::runtime_error("x")));
        }
        catch (const std::runtime_error&)
        {
            failed = true;
        }
    }(got, threw);
    CHECK(got == 3);
    CHECK(threw);
}

TEST_CASE("co_await resumes inline on the resolving thread when there is no executor",
          "[future][coroutine]")
{
    auto [future, promise] = MakeFuture<int>();
    std::thread::id resumedOn;
    int got = 0;
    [](Future<int> f, int& out, std::thread::id& where) -> Detached
    {
        out = co_await f;
        where = TC::Testing::ThisThreadId();
    }(std::move(future), got, resumedOn);
    CHECK(got == 0);
    std::thread resolver([p = std::move(promise)]() mutable { p.SetValue(8); });
    const auto resolverId = resolver.get_id();
    resolver.join();
    CHECK(got == 8);
    CHECK(resumedOn == resolverId);
}

TEST_CASE("WaitFor times out, then Wait still gets the value", "[future][timeout]")
{
    TC::EnableTimers();
    Promise<int> promise;
    Future<int> future = promise.GetFuture(); // a lambda captures it: no structured binding
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(future.WaitFor(std::chrono::milliseconds(20)));
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(15));
    CHECK(future.Valid());

    TC::Scheduler scheduler(1);
    auto timedInTask =
        scheduler.Start([&future] { CHECK_FALSE(future.WaitFor(std::chrono::milliseconds(5))); });
    timedInTask.Join();

    std::thread resolver(
        [p = std::move(promise)]() mutable
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            p.SetValue(4);
        });
    CHECK(future.WaitFor(std::chrono::seconds(10)));
    CHECK(future.Wait() == 4);
    resolver.join();
}

TEST_CASE("Then continuations run on the resolving thread", "[future][then]")
{
    auto [future, promise] = MakeFuture<int>();
    std::thread::id ranOn;
    Future<void> next = future.Then([&ranOn](int) { ranOn = TC::Testing::ThisThreadId(); });
    std::thread resolver([p = std::move(promise)]() mutable { p.SetValue(1); });
    const auto resolverId = resolver.get_id();
    resolver.join();
    next.Wait();
    CHECK(ranOn == resolverId);
}

TEST_CASE("move-only values travel through Then", "[future][then]")
{
    auto [future, promise] = MakeFuture<std::unique_ptr<int>>();
    Future<std::unique_ptr<int>> next = future.Then(
        [](std::unique_ptr<int> p)
        {
            *p += 1;
            return p;
        });
    promise.SetValue(std::make_unique<int>(1));
    CHECK(*next.Wait() == 2);
}
