// WaitQueueBench: primitives written on WaitQueue against the peers users would reach for.
// - WaitQueueHandOff: a cross-thread round trip in which each value goes by hand-off to the
//   thread waiting for it; against two Boost.Fiber buffered_channels and two moodycamel
//   BlockingConcurrentQueues, the same round trip.
// - BoundedQueueThroughput: the guide's BoundedQueue (samples/primitives) of 1024 slots, one
//   thread pushing, one popping; against Boost.Fiber's buffered_channel of 1024 slots and
//   moodycamel's (unbounded) BlockingConcurrentQueue.
// No main: tc_bench links every tests/bench/*Bench.cpp with benchmark_main.

#include "peers/Measure.h"
#include "primitives/BoundedQueue.h"

#include <TC/Core.h>
#include <TC/WaitForResult.h>

#include <benchmark/benchmark.h>
#include <blockingconcurrentqueue.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>

#if defined(TC_HAVE_BOOST_FIBER) && __has_include(<boost/fiber/all.hpp>)
#include <boost/fiber/all.hpp>
#define TC_WAITQUEUE_BENCH_BOOST_FIBER 1
#else
#define TC_WAITQUEUE_BENCH_BOOST_FIBER 0
#endif

namespace
{
constexpr int kRoundTrips = 20000;
constexpr int kItems = 100000;

// One value at a time from one thread to another: handed straight to a waiting receiver, or
// left in the slot (and the receiver resumed) when it is not waiting yet.
class HandOffSlot
{
public:
    void Send(std::int64_t value) noexcept
    {
        if (TC::HandOffResult(waiting_, value))
            return;
        slot_.store(value);
        waiting_.ResumeOne();
    }
    std::int64_t Receive() noexcept
    {
        return *TC::WaitForResult(waiting_, [this]() noexcept { return Take(); });
    }

private:
    std::optional<std::int64_t> Take() noexcept
    {
        const std::int64_t value = slot_.exchange(kEmpty);
        return value == kEmpty ? std::nullopt : std::optional<std::int64_t>(value);
    }
    static constexpr std::int64_t kEmpty = -1;
    std::atomic<std::int64_t> slot_{kEmpty};
    TC::WaitQueue waiting_;
};

// Runs a round trip benchmark: `echo(stop)` serves on a second thread, `ask(i)` sends i and
// waits for the reply, which must be i.
template <class Ask, class Serve>
void RunRoundTrips(benchmark::State& state, Ask ask, Serve serve)
{
    bool ok = true;
    for (auto _ : state)
    {
        std::thread server(serve);
        for (std::int64_t i = 0; i < kRoundTrips; ++i)
            ok &= ask(i) == i;
        ok &= ask(-2) == -2; // the server's end mark, echoed
        server.join();
    }
    if (TCBench::Expect(state, ok, "a reply was not the request"))
        TCBench::ReportItems(state, kRoundTrips);
}

void BM_WaitQueueHandOff(benchmark::State& state)
{
    HandOffSlot requests, replies;
    RunRoundTrips(
        state,
        [&](std::int64_t i)
        {
            requests.Send(i);
            return replies.Receive();
        },
        [&]
        {
            for (std::int64_t request = 0; request != -2;)
                replies.Send(request = requests.Receive());
        });
}
BENCHMARK(BM_WaitQueueHandOff)->UseRealTime();

void BM_WaitQueueHandOff_Moodycamel(benchmark::State& state)
{
    moodycamel::BlockingConcurrentQueue<std::int64_t> requests, replies;
    RunRoundTrips(
        state,
        [&](std::int64_t i)
        {
            requests.enqueue(i);
            std::int64_t reply = 0;
            replies.wait_dequeue(reply);
            return reply;
        },
        [&]
        {
            for (std::int64_t request = 0; request != -2;)
            {
                requests.wait_dequeue(request);
                replies.enqueue(request);
            }
        });
}
BENCHMARK(BM_WaitQueueHandOff_Moodycamel)->UseRealTime();

void BM_BoundedQueueThroughput(benchmark::State& state)
{
    for (auto _ : state)
    {
        Samples::BoundedQueue<std::int64_t> queue(static_cast<std::size_t>(state.range(0)));
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                std::int64_t local = 0;
                for (int i = 0; i < kItems; ++i)
                    local += *queue.Pop();
                sum = local;
            });
        for (int i = 0; i < kItems; ++i)
            queue.Push(i);
        consumer.join();
        if (!TCBench::Expect(state, sum == std::int64_t{kItems} * (kItems - 1) / 2, "values lost"))
            return;
    }
    TCBench::ReportItems(state, kItems);
}
BENCHMARK(BM_BoundedQueueThroughput)->Arg(1024)->UseRealTime();

void BM_BoundedQueueThroughput_Moodycamel(benchmark::State& state)
{
    for (auto _ : state)
    {
        moodycamel::BlockingConcurrentQueue<std::int64_t> queue;
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                std::int64_t value = 0, local = 0;
                for (int i = 0; i < kItems; ++i)
                {
                    queue.wait_dequeue(value);
                    local += value;
                }
                sum = local;
            });
        for (int i = 0; i < kItems; ++i)
            queue.enqueue(i);
        consumer.join();
        if (!TCBench::Expect(state, sum == std::int64_t{kItems} * (kItems - 1) / 2, "values lost"))
            return;
    }
    TCBench::ReportItems(state, kItems);
}
BENCHMARK(BM_BoundedQueueThroughput_Moodycamel)->UseRealTime();

#if TC_WAITQUEUE_BENCH_BOOST_FIBER
namespace fibers = boost::fibers;

void BM_WaitQueueHandOff_BoostFiber(benchmark::State& state)
{
    fibers::buffered_channel<std::int64_t> requests(2), replies(2); // the least capacity it takes
    RunRoundTrips(
        state,
        [&](std::int64_t i)
        {
            requests.push(i);
            std::int64_t reply = 0;
            replies.pop(reply);
            return reply;
        },
        [&]
        {
            for (std::int64_t request = 0; request != -2;)
            {
                requests.pop(request);
                replies.push(request);
            }
        });
}
BENCHMARK(BM_WaitQueueHandOff_BoostFiber)->UseRealTime();

void BM_BoundedQueueThroughput_BoostFiber(benchmark::State& state)
{
    for (auto _ : state)
    {
        fibers::buffered_channel<std::int64_t> channel(static_cast<std::size_t>(state.range(0)));
        std::int64_t sum = 0;
        std::thread consumer(
            [&]
            {
                std::int64_t value = 0, local = 0;
                for (int i = 0; i < kItems; ++i)
                {
                    channel.pop(value);
                    local += value;
                }
                sum = local;
            });
        for (int i = 0; i < kItems; ++i)
            channel.push(i);
        consumer.join();
        if (!TCBench::Expect(state, sum == std::int64_t{kItems} * (kItems - 1) / 2, "values lost"))
            return;
    }
    TCBench::ReportItems(state, kItems);
}
BENCHMARK(BM_BoundedQueueThroughput_BoostFiber)->Arg(1024)->UseRealTime();
#endif
} // namespace
