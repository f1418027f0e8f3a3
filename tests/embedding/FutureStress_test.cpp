// The waiter-slot race: millions of resolve/wait pairs (scaled down in debug and sanitizer
// builds, see Scaled) where the resolve and the wait's publication land as close together as two
// threads can make them, for each kind of waiter and for Then. Meant to run under TSan.

#include "EmbeddingTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using TC::Synchronization::Future;
using TC::Synchronization::Promise;
using TC::Testing::Detached;
using TC::Testing::Scaled;

namespace
{
constexpr std::size_t kBatch = 1024;

// One batch of connected pairs, made before the two sides race over it.
struct Batch
{
    std::vector<Promise<std::uint64_t>> promises;
    std::vector<Future<std::uint64_t>> futures;

    void Refill()
    {
        promises.clear();
        futures.clear();
        promises.resize(kBatch);
        for (auto& p : promises)
            futures.push_back(p.GetFuture());
    }
};

// Spins until `flag` reaches `value`; both sides start a batch together so they race closely.
void SpinUntil(const std::atomic<std::uint64_t>& flag, std::uint64_t value)
{
    while (flag.load(std::memory_order_acquire) < value)
        std::this_thread::yield();
}
} // namespace

TEST_CASE("resolve/wait race: converted thread waiters", "[future][stress]")
{
    const std::uint64_t batches = Scaled(600000) / kBatch + 1;
    Batch batch;
    std::atomic<std::uint64_t> ready{0};
    std::atomic<std::uint64_t> consumed{0};
    std::uint64_t errors = 0;
    std::thread producer(
        [&]
        {
            for (std::uint64_t b = 1; b <= batches; ++b)
            {
                SpinUntil(ready, b);
                for (std::size_t i = 0; i < kBatch; ++i)
                    batch.promises[i].SetValue(b * kBatch + i);
            }
        });
    for (std::uint64_t b = 1; b <= batches; ++b)
    {
        SpinUntil(consumed, b - 1);
        batch.Refill();
        ready.store(b, std::memory_order_release);
        for (std::size_t i = 0; i < kBatch; ++i)
            if (batch.futures[i].Wait() != b * kBatch + i)
                ++errors;
        consumed.store(b, std::memory_order_release);
    }
    producer.join();
    CHECK(errors == 0);
}

TEST_CASE("resolve/wait race: ping-pong between two threads", "[future][stress]")
{
    // Each side waits for the other's resolve of the same round, so every wait races the resolve
    // it needs: the publication CAS and the resolver's exchange meet on every round.
    const std::uint64_t rounds = Scaled(100000);
    std::vector<Promise<std::uint64_t>> ping(rounds), pong(rounds);
    std::vector<Future<std::uint64_t>> pingF, pongF;
    pingF.reserve(rounds);
    pongF.reserve(rounds);
    for (std::uint64_t i = 0; i < rounds; ++i)
    {
        pingF.push_back(ping[i].GetFuture());
        pongF.push_back(pong[i].GetFuture());
    }
    std::uint64_t errors = 0;
    std::thread other(
        [&]
        {
            for (std::uint64_t i = 0; i < rounds; ++i)
            {
                const std::uint64_t v = pingF[i].Wait();
                pong[i].SetValue(v + 1);
            }
        });
    for (std::uint64_t i = 0; i < rounds; ++i)
    {
        ping[i].SetValue(i * 2);
        if (pongF[i].Wait() != i * 2 + 1)
            ++errors;
    }
    other.join();
    CHECK(errors == 0);
}

TEST_CASE("resolve/wait race: task waiters on two workers", "[future][stress]")
{
    const std::uint64_t rounds = Scaled(1000000);
    TC::Scheduler scheduler(2);
    std::vector<Promise<std::uint64_t>> ping(rounds), pong(rounds);
    std::vector<Future<std::uint64_t>> pingF, pongF;
    pingF.reserve(rounds);
    pongF.reserve(rounds);
    for (std::uint64_t i = 0; i < rounds; ++i)
    {
        pingF.push_back(ping[i].GetFuture());
        pongF.push_back(pong[i].GetFuture());
    }
    std::atomic<std::uint64_t> errors{0};
    auto a = scheduler.Start(
        [&]
        {
            for (std::uint64_t i = 0; i < rounds; ++i)
            {
                ping[i].SetValue(i);
                if (pongF[i].Wait() != i + 1)
                    ++errors;
            }
        });
    auto b = scheduler.Start(
        [&]
        {
            for (std::uint64_t i = 0; i < rounds; ++i)
                pong[i].SetValue(pingF[i].Wait() + 1);
        });
    a.Join();
    b.Join();
    CHECK(errors == 0);
}

TEST_CASE("resolve/wait race: a coroutine and a task ping-pong", "[future][stress]")
{
    const std::uint64_t rounds = Scaled(600000);
    TC::Scheduler scheduler(2);
    std::vector<Promise<std::uint64_t>> ping(rounds), pong(rounds);
    std::vector<Future<std::uint64_t>> pingF, pongF;
    pingF.reserve(rounds);
    pongF.reserve(rounds);
    for (std::uint64_t i = 0; i < rounds; ++i)
    {
        pingF.push_back(ping[i].GetFuture());
        pongF.push_back(pong[i].GetFuture());
    }
    std::atomic<std::uint64_t> errors{0};
    Promise<void> done;
    Future<void> doneFuture = done.GetFuture();
    [](TC::Scheduler& s, std::vector<Future<std::uint64_t>>& in,
       std::vector<Promise<std::uint64_t>>& out, Promise<void> finished) -> Detached
    {
        co_await s.Schedule();
        for (std::uint64_t i = 0; i < in.size(); ++i)
            out[i].SetValue(co_await in[i] + 1);
        finished.SetValue();
    }(scheduler, pingF, pong, std::move(done));
    auto task = scheduler.Start(
        [&]
        {
            for (std::uint64_t i = 0; i < rounds; ++i)
            {
                ping[i].SetValue(i);
                if (pongF[i].Wait() != i + 1)
                    ++errors;
            }
        });
    task.Join();
    doneFuture.Wait();
    CHECK(errors == 0);
}

TEST_CASE("resolve/attach race: Then against SetValue", "[future][stress][then]")
{
    const std::uint64_t batches = Scaled(600000) / kBatch + 1;
    Batch batch;
    std::vector<Future<std::uint64_t>> results(kBatch);
    std::atomic<std::uint64_t> ready{0};
    std::atomic<std::uint64_t> consumed{0};
    std::uint64_t errors = 0;
    std::thread producer(
        [&]
        {
            for (std::uint64_t b = 1; b <= batches; ++b)
            {
                SpinUntil(ready, b);
                for (std::size_t i = 0; i < kBatch; ++i)
                    batch.promises[i].SetValue(i);
            }
        });
    for (std::uint64_t b = 1; b <= batches; ++b)
    {
        SpinUntil(consumed, b - 1);
        batch.Refill();
        ready.store(b, std::memory_order_release);
        for (std::size_t i = 0; i < kBatch; ++i)
            results[i] = batch.futures[i].Then([](std::uint64_t v) { return v * 3; });
        for (std::size_t i = 0; i < kBatch; ++i)
            if (results[i].Wait() != i * 3)
                ++errors;
        consumed.store(b, std::memory_order_release);
    }
    producer.join();
    CHECK(errors == 0);
}
