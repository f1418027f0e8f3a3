// bounded-queue: the BoundedQueue of the "Many waiters with timeouts" guide, used by a task, a
// thread and a coroutine, its timeouts checked, driven by the test kit over seeded runs, and a
// million items moved through it by producers and consumers of every kind. Prints what it did
// and exits non-zero if a check fails. Optional argument: how many items the last part moves.

#include "primitives/BoundedQueue.h"
#include "primitives/SampleChecks.h"

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Testing.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace std::chrono_literals;
using Samples::BoundedQueue;
using Samples::Expect;

namespace
{
// [guide:bounded-queue-use]
TC::Strands::DetachedTask SumInCoroutine(TC::Scheduler& scheduler, BoundedQueue<int>& queue,
                                std::atomic<std::int64_t>& sum, std::atomic<int>& done)
{
    co_await scheduler.Schedule();
    while (auto item = co_await queue.PopAsync(1s)) // std::nullopt: a second with nothing
        if (*item < 0)
            break;
        else
            sum += *item;
    done.fetch_add(1);
}

void ThreeKindsOfWaiter()
{
    TC::Scheduler scheduler(2);
    BoundedQueue<int> queue(4); // small: the producer waits for room most of the time
    std::atomic<std::int64_t> sum{0};
    std::atomic<int> done{0};
    auto consumer = scheduler.Start([&] { // a task
        while (auto item = queue.Pop())
            if (*item < 0)
                break;
            else
                sum += *item;
        done.fetch_add(1);
    });
    SumInCoroutine(scheduler, queue, sum, done); // a coroutine
    std::thread producer([&] {                   // a thread
        for (int i = 1; i <= 10000; ++i)
            queue.Push(i);
        queue.Push(-1); // one end mark per consumer
        queue.Push(-1);
    });
    producer.join();
    consumer.Join();
    while (done.load() < 2)
        std::this_thread::sleep_for(1ms);
    std::printf("three kinds: sum %lld\n", static_cast<long long>(sum.load()));
    Expect(sum.load() == 10000LL * 10001 / 2, "every item arrives once");
}
// [/guide:bounded-queue-use]

void Timeouts()
{
    BoundedQueue<int> queue(2);
    Expect(!queue.Pop(5ms).has_value(), "Pop on an empty queue times out");
    Expect(queue.Push(1, 5ms) && queue.Push(2, 5ms), "Push with room passes");
    Expect(!queue.Push(3, 5ms), "Push on a full queue times out");
    Expect(queue.Pop(5ms) == 1 && queue.Pop(5ms) == 2, "first in, first out");
    std::printf("timeouts: checked\n");
}

// Two producers and two consumers of any kind, each moving `perProducer` items.
void Scenario(TC::Testing::Context& ctx)
{
    constexpr int kPerProducer = 50;
    auto& queue = ctx.Make<BoundedQueue<int>>(2);
    auto& sum = ctx.Make<std::atomic<std::int64_t>>(0);
    for (int p = 0; p < 2; ++p)
        ctx.Spawn(
            "producer",
            [&] {
                for (int i = 1; i <= kPerProducer; ++i)
                    queue.Push(i);
                queue.Push(-1);
            },
            [&]() -> TC::Strands::Task<void> {
                for (int i = 1; i <= kPerProducer; ++i)
                    co_await queue.PushAsync(i);
                co_await queue.PushAsync(-1);
            });
    for (int c = 0; c < 2; ++c)
        ctx.Spawn(
            "consumer",
            [&] {
                for (auto item = queue.Pop(); *item >= 0; item = queue.Pop())
                    sum += *item;
            },
            [&]() -> TC::Strands::Task<void> {
                for (auto item = co_await queue.PopAsync(); *item >= 0; item = co_await queue.PopAsync())
                    sum += *item;
            });
    ctx.AtEnd([&] { ctx.Check(sum.load() == 2 * kPerProducer * (kPerProducer + 1) / 2, "the sum"); });
}

void MillionItems(std::int64_t items)
{
    TC::Scheduler scheduler(2);
    BoundedQueue<std::int64_t> queue(64);
    std::atomic<std::int64_t> sum{0};
    const std::int64_t half = items / 2;
    auto produce = [&](std::int64_t from) {
        for (std::int64_t i = from; i < from + half; ++i)
            queue.Push(i);
        queue.Push(-1);
    };
    auto consume = [&] {
        std::int64_t local = 0;
        for (auto item = queue.Pop(); *item >= 0; item = queue.Pop())
            local += *item;
        sum += local;
    };
    auto taskProducer = scheduler.Start([&] { produce(0); });
    auto taskConsumer = scheduler.Start(consume);
    std::thread threadProducer([&] { produce(half); });
    std::thread threadConsumer(consume);
    threadProducer.join();
    threadConsumer.join();
    taskProducer.Join();
    taskConsumer.Join();
    const std::int64_t n = 2 * half;
    std::printf("moved: %lld items\n", static_cast<long long>(n));
    Expect(sum.load() == n * (n - 1) / 2, "every item arrives once under load");
}
} // namespace

int main(int argc, char** argv)
{
    TC::EnableTimers();
    ThreeKindsOfWaiter();
    Timeouts();

    Samples::RunTestKit(Scenario);

    MillionItems(argc > 1 ? std::atoll(argv[1]) : 1'000'000);
    return Samples::Verdict();
}
