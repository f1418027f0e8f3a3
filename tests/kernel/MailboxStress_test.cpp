// The seed's Mailbox across threads, millions of operations: no lost wake-up (the run ends),
// no double resume (checked mode aborts on one), and every value arrives.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Mailbox;
using TestSupport::Scaled;

TEST_CASE("Mailbox stress: task pairs across two workers plus foreign threads")
{
    std::vector<std::unique_ptr<Mailbox>> requests, replies;
    Scheduler scheduler(2);
    const int pairs = 8;
    const long rounds = Scaled(250000); // 8 pairs x 250k round trips x 2 handoffs = 4M operations
    std::vector<JoinHandle> tasks;
    std::atomic<long> total{0};
    for (int i = 0; i < pairs; ++i)
    {
        requests.push_back(std::make_unique<Mailbox>());
        replies.push_back(std::make_unique<Mailbox>());
    }
    for (int i = 0; i < pairs; ++i)
    {
        tasks.push_back(scheduler.Start([&, i] {
            for (int request; (request = requests[i]->Take()) > 0;)
                replies[i]->Put(request);
        }));
    }
    // Half the clients are tasks, half converted threads.
    std::vector<std::thread> threads;
    for (int i = 0; i < pairs; ++i)
    {
        auto client = [&, i] {
            long sum = 0;
            for (long r = 1; r <= rounds; ++r)
            {
                requests[i]->Put(static_cast<int>(r % 1000000) + 1);
                sum += replies[i]->Take();
            }
            requests[i]->Put(-1);
            total += sum;
        };
        if (i % 2 == 0)
            tasks.push_back(scheduler.Start(client));
        else
            threads.emplace_back(client);
    }
    for (auto& thread : threads)
        thread.join();
    for (auto& task : tasks)
        task.Join();
    long expected = 0;
    for (long r = 1; r <= rounds; ++r)
        expected += r % 1000000 + 1;
    REQUIRE(total == expected * pairs);
}

TEST_CASE("Mailbox stress: timed takes racing puts from a foreign thread")
{
    EnableTimers();
    Mailbox data, ack;
    Scheduler scheduler(2);
    const long values = Scaled(200000);
    std::atomic<long> received{0};
    auto consumer = scheduler.Start([&] {
        long count = 0;
        long sum = 0;
        while (count < values)
        {
            int value = 0;
            if (data.Take(value, std::chrono::microseconds(50)))
            {
                sum += value;
                ++count;
                ack.Put(1);
            }
        }
        received = sum;
    });
    std::thread producer([&] {
        for (long i = 1; i <= values; ++i)
        {
            data.Put(1);
            (void)ack.Take();
        }
    });
    producer.join();
    consumer.Join();
    REQUIRE(received == values);
}
