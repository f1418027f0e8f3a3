// one-shot: the OneShot<T> of the "Many waiters with timeouts" guide, waited on by a task, a
// thread and a coroutine, its timeout and its destruction by the last waiter checked, driven by
// the test kit over seeded runs, and a million gets and sets. Prints what it did and exits
// non-zero if a check fails. Optional argument: how many operations the last part makes.

#include "primitives/OneShot.h"
#include "primitives/SampleChecks.h"

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Testing.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using Samples::OneShot;
using Samples::Expect;

namespace
{
// What a Get returned is there and equals `expected` (nullptr: it timed out).
template <class T>
bool Is(const T* got, const T& expected)
{
    return got != nullptr && *got == expected;
}

// [guide:one-shot-use]
TC::Strands::DetachedTask ReadInCoroutine(TC::Scheduler& scheduler, OneShot<std::string>& answer,
                                 std::atomic<int>& right)
{
    co_await scheduler.Schedule();
    if (const std::string* text = co_await answer.GetAsync(5s))
        right += Is(text, std::string("forty-two"));
}

void ThreeKindsOfWaiter()
{
    TC::Scheduler scheduler(2);
    OneShot<std::string> answer;
    std::atomic<int> right{0};
    auto task = scheduler.Start([&] { right += Is(answer.Get(), std::string("forty-two")); });
    std::thread thread([&] { right += Is(answer.Get(), std::string("forty-two")); });
    ReadInCoroutine(scheduler, answer, right);
    std::this_thread::sleep_for(10ms); // let them wait (or not: either way they read it)
    Expect(answer.Set("forty-two"), "the first Set wins");
    Expect(!answer.Set("other"), "a second Set changes nothing");
    task.Join();
    thread.join();
    while (right.load() < 3)
        std::this_thread::sleep_for(1ms);
    std::printf("three kinds: %d waiters read the value\n", right.load());
}
// [/guide:one-shot-use]

void TimeoutAndLastWaiterDestroys()
{
    OneShot<int> never;
    Expect(never.Get(5ms) == nullptr, "Get on an unset OneShot times out");

    // Three waiters; whoever finishes last destroys it, right after its Get returned.
    for (int round = 0; round < 1000; ++round)
    {
        auto* shot = new OneShot<int>;
        std::atomic<int> left{3};
        std::vector<std::thread> waiters;
        for (int i = 0; i < 3; ++i)
            waiters.emplace_back([&] {
                Expect(Is(shot->Get(), round), "every waiter reads the value");
                if (left.fetch_sub(1) == 1)
                    delete shot;
            });
        shot->Set(round); // touches nothing after its ResumeAll's scope
        for (auto& waiter : waiters)
            waiter.join();
    }
    std::printf("timeout, and the last waiter destroys: checked\n");
}

void Scenario(TC::Testing::Context& ctx)
{
    auto& shot = ctx.Make<OneShot<int>>();
    for (int i = 0; i < 3; ++i)
        ctx.Spawn(
            "reader", [&] { ctx.Check(Is(shot.Get(), 7), "the value"); },
            [&]() -> TC::Strands::Task<void> { ctx.Check(Is(co_await shot.GetAsync(), 7), "the value"); });
    ctx.Spawn(
        "setter", [&] { ctx.Check(shot.Set(7), "the first Set wins"); },
        [&]() -> TC::Strands::Task<void> {
            ctx.Check(shot.Set(7), "the first Set wins");
            co_return;
        });
}

TC::Strands::DetachedTask ReadAllInCoroutine(TC::Scheduler& scheduler,
                                    std::vector<std::unique_ptr<OneShot<int>>>& shots,
                                    std::atomic<int>& done)
{
    co_await scheduler.Schedule();
    for (std::size_t i = 0; i < shots.size(); ++i)
        Expect(Is(co_await shots[i]->GetAsync(), static_cast<int>(i)), "the round's value");
    done.fetch_add(1);
}

void MillionOperations(std::int64_t operations)
{
    // Each round: one Set and three Gets (a task, a thread and a coroutine), which race it.
    std::vector<std::unique_ptr<OneShot<int>>> shots(static_cast<std::size_t>(operations / 4));
    for (auto& shot : shots)
        shot = std::make_unique<OneShot<int>>();
    TC::Scheduler scheduler(2);
    std::atomic<int> done{0};
    auto readAll = [&] {
        for (std::size_t i = 0; i < shots.size(); ++i)
            Expect(Is(shots[i]->Get(), static_cast<int>(i)), "the round's value");
    };
    auto task = scheduler.Start(readAll);
    std::thread thread(readAll);
    ReadAllInCoroutine(scheduler, shots, done);
    for (std::size_t i = 0; i < shots.size(); ++i)
        shots[i]->Set(static_cast<int>(i));
    task.Join();
    thread.join();
    while (done.load() < 1)
        std::this_thread::sleep_for(1ms);
    std::printf("operations: %lld\n", static_cast<long long>(shots.size() * 4));
}
} // namespace

int main(int argc, char** argv)
{
    TC::EnableTimers();
    ThreeKindsOfWaiter();
    TimeoutAndLastWaiterDestroys();

    Samples::RunTestKit(Scenario);

    MillionOperations(argc > 1 ? std::atoll(argv[1]) : 1'000'000);
    return Samples::Verdict();
}
