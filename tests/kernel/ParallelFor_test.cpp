// ParallelFor: every index of the range runs once, in chunks of at most `grain`, from a task, a
// converted thread or the host, nested, with chunks that suspend; the first exception is rethrown
// to the caller once every chunk has ended; ranges past one round's 2^32 indices; a stopped
// scheduler refuses before any chunk runs.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Scaled;

namespace
{
constexpr std::size_t kFloats = 100'000;

std::vector<float> Floats()
{
    std::vector<float> values(kFloats);
    for (std::size_t i = 0; i < kFloats; ++i)
        values[i] = static_cast<float>(i % 1000) * 0.5f;
    return values;
}

// The sum of `values` by ParallelFor on `scheduler`, each chunk summing its own part, or NaN when
// an index ran twice or never, or a chunk exceeded `grain` (checked here, not with REQUIRE: this
// may run on a worker thread).
double ParallelSum(Scheduler& scheduler, const std::vector<float>& values, std::size_t grain)
{
    std::vector<std::atomic<std::uint8_t>> visits(values.size());
    std::mutex lock;
    double sum = 0;
    std::atomic<bool> chunkTooLarge{false};
    ParallelFor(scheduler, {0, values.size()}, grain,
                [&](IndexRange chunk)
                {
                    if (grain != 0 && chunk.Size() > grain)
                        chunkTooLarge = true;
                    double part = 0;
                    for (std::size_t i = chunk.begin; i < chunk.end; ++i)
                    {
                        part += static_cast<double>(values[i]);
                        visits[i].fetch_add(1, std::memory_order_relaxed);
                    }
                    std::lock_guard guard(lock);
                    sum += part;
                });
    for (const auto& visit : visits)
        if (visit.load() != 1)
            return std::nan("");
    return chunkTooLarge.load() ? std::nan("") : sum;
}

double SerialSum(const std::vector<float>& values)
{
    return std::accumulate(values.begin(), values.end(), 0.0);
}
} // namespace

TEST_CASE("ParallelFor from a plain thread sums 100 000 floats on two workers")
{
    Scheduler scheduler(2u);
    const auto values = Floats();
    for (std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{1000}, kFloats})
        REQUIRE(ParallelSum(scheduler, values, grain) == SerialSum(values));
}

TEST_CASE("ParallelFor from a task of the scheduler it runs on, and of another one")
{
    Scheduler scheduler(2u);
    Scheduler other(1u);
    const auto values = Floats();
    double onSame = 0;
    double onOther = 0;
    scheduler.Start([&] { onSame = ParallelSum(scheduler, values, 500); }).Join();
    other.Start([&] { onOther = ParallelSum(scheduler, values, 500); }).Join();
    REQUIRE(onSame == SerialSum(values));
    REQUIRE(onOther == SerialSum(values));
}

TEST_CASE("ParallelFor from the host: onto its own scheduler without workers, and onto workers")
{
    Scheduler host(0u);
    Scheduler workers(2u);
    host.RunUntilIdle(); // this thread is the host
    const auto values = Floats();
    REQUIRE(ParallelSum(host, values, 1000) == SerialSum(values));
    REQUIRE(host.LiveTasks() == 0); // no helpers: the caller ran every chunk
    double fromHostTask = 0;
    JoinHandle pinned = host.Start([&] { fromHostTask = ParallelSum(workers, values, 250); });
    host.RunUntilIdle();
    pinned.Join();
    REQUIRE(fromHostTask == SerialSum(values));
}

TEST_CASE("ParallelFor nested: each chunk of the outer range runs an inner ParallelFor")
{
    Scheduler scheduler(2u);
    constexpr std::size_t kRows = 64;
    constexpr std::size_t kColumns = 1000;
    std::vector<std::atomic<std::uint8_t>> cells(kRows * kColumns);
    ParallelFor(scheduler, {0, kRows}, 1,
                [&](IndexRange rows)
                {
                    for (std::size_t row = rows.begin; row < rows.end; ++row)
                        ParallelFor(scheduler, {0, kColumns}, 64,
                                    [&](IndexRange columns)
                                    {
                                        for (std::size_t c = columns.begin; c < columns.end; ++c)
                                            cells[row * kColumns + c].fetch_add(1);
                                    });
                });
    for (const auto& cell : cells)
        REQUIRE(cell.load() == 1);
}

TEST_CASE("ParallelFor: chunks that suspend (yield) hold only their helper; all indices run")
{
    Scheduler scheduler(2u);
    std::vector<std::atomic<std::uint8_t>> visits(10'000);
    JoinHandle caller = scheduler.Start(
        [&]
        {
            ParallelFor(scheduler, {0, visits.size()}, 16,
                        [&](IndexRange chunk)
                        {
                            YieldTask(); // a task (caller or helper) suspends and continues
                            for (std::size_t i = chunk.begin; i < chunk.end; ++i)
                                visits[i].fetch_add(1);
                        });
        });
    caller.Join();
    for (const auto& visit : visits)
        REQUIRE(visit.load() == 1);
}

TEST_CASE("ParallelFor rethrows the first exception once every chunk has ended")
{
    Scheduler scheduler(2u);
    for (bool fromTask : {false, true})
    {
        std::atomic<int> running{0};
        std::atomic<int> runningAtReturn{-1};
        auto run = [&]
        {
            try
            {
                ParallelFor(scheduler, {0, kFloats}, 100,
                            [&](IndexRange chunk)
                            {
                                ++running;
                                if (chunk.begin <= 50'000 && 50'000 < chunk.end)
                                {
                                    --running;
                                    throw std::runtime_error("chunk failed");
                                }
                                std::this_thread::yield();
                                --running;
                            });
            }
            catch (...)
            {
                runningAtReturn = running.load();
                throw;
            }
        };
        if (fromTask)
            REQUIRE_THROWS_WITH(scheduler.Start(run).Join(), "chunk failed");
        else
            REQUIRE_THROWS_WITH(run(), "chunk failed");
        REQUIRE(runningAtReturn.load() == 0);
    }
}

TEST_CASE("ParallelFor of an empty range calls nothing; a range past 2^32 indices runs in rounds")
{
    Scheduler scheduler(2u);
    std::atomic<int> calls{0};
    ParallelFor(scheduler, {5, 5}, 1, [&](IndexRange) { ++calls; });
    ParallelFor(scheduler, {9, 3}, 1, [&](IndexRange) { ++calls; });
    REQUIRE(calls.load() == 0);
    const std::size_t begin = 7;
    const std::size_t end = begin + (std::size_t{1} << 32) + 12345;
    std::atomic<std::size_t> covered{0};
    std::atomic<bool> outside{false};
    ParallelFor(scheduler, {begin, end}, std::size_t{1} << 26,
                [&](IndexRange chunk)
                {
                    if (chunk.begin < begin || chunk.end > end || chunk.Size() > std::size_t{1} << 26)
                        outside = true;
                    covered += chunk.Size();
                });
    REQUIRE(covered.load() == end - begin);
    REQUIRE_FALSE(outside.load());
}

TEST_CASE("ParallelFor on a stopped scheduler throws before any chunk runs")
{
    Scheduler scheduler(2u);
    scheduler.Stop();
    std::atomic<int> calls{0};
    REQUIRE_THROWS_AS(ParallelFor(scheduler, {0, 1000}, 10, [&](IndexRange) { ++calls; }),
                      std::logic_error);
    REQUIRE(calls.load() == 0);
}

TEST_CASE("ParallelFor stress: rounds of varied sizes and grains from threads and tasks")
{
    Scheduler scheduler(2u);
    const long total = Scaled(1'000'000);
    long indices = 0;
    std::uint64_t seed = 0x9e3779b97f4a7c15ull;
    std::atomic<long> ran{0};
    long rounds = 0;
    while (indices < total)
    {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        const std::size_t size = 1 + seed % 500;
        const std::size_t grain = seed >> 32 & 63;
        auto body = [&](IndexRange chunk) { ran.fetch_add(static_cast<long>(chunk.Size())); };
        if (rounds % 2 == 0)
            ParallelFor(scheduler, {0, size}, grain, body);
        else
            scheduler.Start([&] { ParallelFor(scheduler, {0, size}, grain, body); }).Join();
        indices += static_cast<long>(size);
        ++rounds;
    }
    REQUIRE(ran.load() == indices);
    while (scheduler.LiveTasks() != 0) // helpers that started after their round ended
        std::this_thread::yield();
}
