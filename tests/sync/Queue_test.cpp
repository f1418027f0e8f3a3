// Mailbox<T> and Channel<T>: every kind of waiter, timeouts, and Close with waiters on both ends.

#include "SyncTestSupport.h"

#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

TEST_CASE("Mailbox<T> delivers to a taker of every kind and replaces an untaken value", "[mailbox]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Mailbox<std::string> box;
        std::string got;
        Waiters w;
        auto record = [&got](std::string value) { got = std::move(value); };
        w.Start(
            kind, [&] { got = box.Take(); },
            [&] {
                return Then<Mailbox<std::string>::TakeAwaiter, decltype(record)>{box.TakeAsync(),
                                                                                 record};
            });
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 0);
        box.Put("hello");
        CHECK(w.WaitFinished(1));
        w.JoinAll();
        CHECK(got == "hello");
    }
    Mailbox<int> box;
    CHECK_FALSE(box.Put(1));
    CHECK(box.Put(2)); // replaced the untaken 1
    CHECK(box.Take() == 2);
    CHECK_FALSE(box.TryTake());
}

TEST_CASE("Mailbox<T>::Take with a huge finite timeout waits for the value", "[mailbox][timeout]")
{
    // It computed now + timeout, a signed overflow for a timeout near Duration::Infinite()
    // (undefined behaviour: UBSan stops here in the asan preset).
    TC::EnableTimers();
    Mailbox<int> box;
    std::thread putter(
        [&]
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            box.Put(9);
        });
    const std::optional<int> taken = box.Take(TC::Duration::FromNanoseconds(INT64_MAX - 1));
    putter.join();
    CHECK(taken == 9);
}

TEST_CASE("Mailbox<T> timed take times out from every kind of waiter", "[mailbox][timeout]")
{
    TC::EnableTimers();
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Mailbox<int> box;
        std::atomic<int> result{-1};
        auto record = [&result](std::optional<int> value) { result = value ? *value : 0; };
        Waiters w;
        auto start = [&](TC::Duration timeout)
        {
            w.Start(
                kind, [&, timeout] { record(box.Take(timeout)); },
                [&, timeout] {
                    return Then<Mailbox<int>::TakeForAwaiter, decltype(record)>{
                        box.TakeAsync(timeout), record};
                });
        };
        start(5ms);
        CHECK(w.WaitFinished(1));
        CHECK(result == 0);
        start(10s);
        std::this_thread::sleep_for(5ms);
        box.Put(7);
        CHECK(w.WaitFinished(2));
        CHECK(result == 7);
    }
}

TEST_CASE("Channel delivers values to receivers of every kind, bounded and unbounded", "[channel]")
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{2}})
        for (WaiterKind kind : kAllKinds)
        {
            INFO("waiter: " << Name(kind) << ", capacity " << capacity);
            Channel<std::unique_ptr<int>> channel(capacity);
            std::atomic<int> sum{0};
            auto record = [&sum](std::optional<std::unique_ptr<int>> value)
            {
                if (value)
                    sum += **value;
            };
            Waiters w;
            for (int i = 0; i < 4; ++i)
                w.Start(
                    kind, [&] { record(channel.Receive()); },
                    [&]
                    {
                        return Then<Channel<std::unique_ptr<int>>::ReceiveAwaiter,
                                    decltype(record)>{channel.ReceiveAsync(), record};
                    });
            std::this_thread::sleep_for(10ms);
            CHECK(w.Finished() == 0);
            for (int i = 1; i <= 4; ++i)
                CHECK(channel.Send(std::make_unique<int>(i)));
            CHECK(w.WaitFinished(4));
            CHECK(sum == 10);
        }
}

TEST_CASE("Bounded Channel suspends senders of every kind while full", "[channel]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        Channel<int> channel(1);
        CHECK(channel.TrySend(1) == ChannelStatus::Ok);
        CHECK(channel.TrySend(2) == ChannelStatus::Full);
        std::atomic<int> accepted{0};
        auto record = [&accepted](bool ok) { accepted += ok ? 1 : 0; };
        Waiters w;
        for (int i = 0; i < 2; ++i)
            w.Start(
                kind, [&, i] { record(channel.Send(10 + i)); },
                [&, i] {
                    return Then<Channel<int>::SendAwaiter, decltype(record)>{
                        channel.SendAsync(10 + i), record};
                });
        std::this_thread::sleep_for(10ms);
        CHECK(w.Finished() == 0);
        int total = 0;
        for (int i = 0; i < 3; ++i)
            total += *channel.Receive();
        CHECK(w.WaitFinished(2));
        CHECK(total == 1 + 10 + 11);
        CHECK(accepted == 2);
    }
}

// A sender thread that finds a large channel full spins for a batch of room (a quarter of the
// capacity); room for one value, and no more coming, must still let it send.
TEST_CASE("Bounded Channel: a sender thread waiting for room sends once a single value is taken",
          "[channel]")
{
    constexpr int kCapacity = 256;
    Channel<int> channel(kCapacity);
    for (int i = 0; i < kCapacity; ++i)
        REQUIRE(channel.TrySend(int{i}) == ChannelStatus::Ok);
    std::atomic<int> sent{0};
    std::thread sender(
        [&]
        {
            for (int i = 0; i < 3; ++i)
                if (channel.Send(kCapacity + i)) // Catch2 asserts on the test's thread only
                    sent.fetch_add(1);
        });
    for (int i = 0; i < 3; ++i)
    {
        std::this_thread::sleep_for(1ms); // usually spinning or suspended; either way it passes
        CHECK(*channel.Receive() == i);
        CHECK(Eventually([&] { return sent.load() == i + 1; }));
    }
    sender.join();
    CHECK(channel.SizeApprox() == kCapacity);
    for (int i = 3; i < kCapacity + 3; ++i)
        CHECK(*channel.Receive() == i);
}

TEST_CASE("Channel timed send and receive time out", "[channel][timeout]")
{
    TC::EnableTimers();
    Channel<int> channel(1);
    int out = 0;
    CHECK(channel.Receive(out, 5ms) == ChannelStatus::TimedOut);
    CHECK(channel.Send(1, 5ms) == ChannelStatus::Ok);
    CHECK(channel.Send(2, 5ms) == ChannelStatus::TimedOut);
    CHECK(channel.TryReceive(out) == ChannelStatus::Ok);
    CHECK(out == 1);
    CHECK(channel.TryReceive(out) == ChannelStatus::Empty);
    TC::Scheduler scheduler(1u);
    std::atomic<int> timedOut{0};
    scheduler
        .Start(
            [&]
            {
                int value = 0;
                timedOut += channel.Receive(value, 5ms) == ChannelStatus::TimedOut;
                CHECK(channel.Send(3, 5ms) == ChannelStatus::Ok);
                timedOut += channel.Send(4, 5ms) == ChannelStatus::TimedOut;
            })
        .Join();
    CHECK(timedOut == 2);
    CHECK(channel.SizeApprox() == 1);
}

// ctest also runs this alone (sync.zerotimeout), in a process where no test enabled timers:
// there a timed wait has no limit, so a zero timeout that waited would hang it.
TEST_CASE("Channel: a zero or negative timeout looks and never waits",
          "[channel][timeout][zerotimeout]")
{
    // The statuses each kind of caller saw, asserted here (Catch2's checks are not thread-safe).
    auto look = [](Channel<int>& channel)
    {
        std::vector<ChannelStatus> seen;
        int out = 0;
        seen.push_back(channel.Receive(out, TC::Duration::Zero())); // empty
        seen.push_back(channel.Send(1, TC::Duration::Zero()));      // room for one
        seen.push_back(channel.Send(2, -1ms));                      // full
        seen.push_back(channel.Receive(out, TC::Duration::Zero())); // the 1
        seen.push_back(out == 1 ? ChannelStatus::Ok : ChannelStatus::Empty);
        seen.push_back(channel.Receive(out, -1ms)); // empty again
        channel.Close();
        seen.push_back(channel.Send(3, TC::Duration::Zero()));      // closed
        seen.push_back(channel.Receive(out, TC::Duration::Zero())); // closed and drained
        return seen;
    };
    const std::vector<ChannelStatus> expected{ChannelStatus::TimedOut, ChannelStatus::Ok,
                                              ChannelStatus::TimedOut, ChannelStatus::Ok,
                                              ChannelStatus::Ok,       ChannelStatus::TimedOut,
                                              ChannelStatus::Closed,   ChannelStatus::Closed};
    Channel<int> fromThread(1);
    CHECK(look(fromThread) == expected);
    Channel<int> fromTask(1);
    std::vector<ChannelStatus> seenInTask;
    TC::Scheduler scheduler(1u);
    scheduler.Start([&] { seenInTask = look(fromTask); }).Join();
    CHECK(seenInTask == expected);
}

TEST_CASE("Channel Close resumes waiting receivers and senders; receivers drain first",
          "[channel][close]")
{
    for (WaiterKind kind : kAllKinds)
    {
        INFO("waiter: " << Name(kind));
        // Receivers waiting on an empty channel.
        {
            Channel<int> channel;
            std::atomic<int> closedSeen{0};
            auto record = [&closedSeen](std::optional<int> v) { closedSeen += v ? 0 : 1; };
            Waiters w;
            for (int i = 0; i < 3; ++i)
                w.Start(
                    kind, [&] { record(channel.Receive()); },
                    [&] {
                        return Then<Channel<int>::ReceiveAwaiter, decltype(record)>{
                            channel.ReceiveAsync(), record};
                    });
            std::this_thread::sleep_for(10ms);
            channel.Close();
            CHECK(w.WaitFinished(3));
            CHECK(closedSeen == 3);
            CHECK_FALSE(channel.Send(1));
        }
        // Senders waiting on a full channel.
        {
            Channel<int> channel(1);
            CHECK(channel.Send(42));
            std::atomic<int> refused{0};
            auto record = [&refused](bool ok) { refused += ok ? 0 : 1; };
            Waiters w;
            for (int i = 0; i < 3; ++i)
                w.Start(
                    kind, [&, i] { record(channel.Send(i)); },
                    [&] {
                        return Then<Channel<int>::SendAwaiter, decltype(record)>{
                            channel.SendAsync(7), record};
                    });
            std::this_thread::sleep_for(10ms);
            channel.Close();
            CHECK(w.WaitFinished(3));
            CHECK(refused == 3);
            CHECK(channel.Receive() == 42); // what was sent before Close is still received
            CHECK_FALSE(channel.Receive());
            int out = 0;
            CHECK(channel.TryReceive(out) == ChannelStatus::Closed);
        }
    }
}

namespace
{
// 16 bytes, trivially copyable, no default constructor: a channel needs neither.
struct Pair
{
    Pair(std::int32_t a, double b) : first(a), second(b) {}
    std::int32_t first;
    double second;
};
} // namespace

// One sender task on a two-worker scheduler: a bounded channel suspends it often, so it resumes
// on either worker, and its values must still arrive in the order sent.
template <class Value, class Make, class Read>
void CheckOneSenderOrder(Make make, Read read)
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{3}})
    {
        INFO("capacity " << capacity);
        Channel<Value> channel(capacity);
        TC::Scheduler scheduler(2u);
        constexpr int kCount = 20000;
        std::atomic<int> refused{0}; // Catch2 assertions stay on the test's thread
        auto producer = scheduler.Start(
            [&]
            {
                for (int i = 0; i < kCount; ++i)
                {
                    refused += channel.Send(make(i)) ? 0 : 1;
                    if (i % 64 == 0)
                        TC::YieldTask(); // moves between workers even when nothing suspends
                }
            });
        int outOfOrder = 0;
        for (int i = 0; i < kCount; ++i)
        {
            std::optional<Value> value = channel.Receive();
            if (!value || read(*value) != i)
                ++outOfOrder;
        }
        producer.Join();
        CHECK(refused == 0);
        CHECK(outOfOrder == 0);
        Value out = make(0);
        CHECK(channel.TryReceive(out) == ChannelStatus::Empty);
        CHECK(channel.TrySend(make(7)) == ChannelStatus::Ok);
        channel.Close();
        CHECK(channel.TryReceive(out) == ChannelStatus::Ok);
        CHECK(read(out) == 7);
        CHECK_FALSE(channel.Receive().has_value());
    }
}

TEST_CASE("Channel keeps one sender's order across workers: a trivially copyable value", "[channel]")
{
    CheckOneSenderOrder<Pair>([](int i) { return Pair(i, i * 0.5); }, [](const Pair& p)
                              { return p.second == p.first * 0.5 ? p.first : -1; });
}

TEST_CASE("Channel keeps one sender's order across workers: a move-only value", "[channel]")
{
    CheckOneSenderOrder<std::unique_ptr<int>>([](int i) { return std::make_unique<int>(i); },
                                              [](const std::unique_ptr<int>& p) { return *p; });
}

TEST_CASE("Channel destroys the values it still holds", "[channel]")
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{400}})
    {
        INFO("capacity " << capacity);
        auto counter = std::make_shared<int>(0);
        {
            Channel<std::shared_ptr<int>> channel(capacity);
            for (int i = 0; i < 300; ++i) // spans ten blocks of 31 slots
                channel.Send(counter);
            CHECK(counter.use_count() == 301);
            for (int i = 0; i < 40; ++i) // the first block freed, the second half read
                CHECK(channel.Receive().has_value());
            CHECK(counter.use_count() == 261);
        }
        CHECK(counter.use_count() == 1);
    }
}

namespace
{
// Counts live instances; its move constructor throws on the value `throwOnMove` names.
struct Fragile
{
    static inline std::atomic<int> live{0};
    static inline int throwOnMove = -1;

    explicit Fragile(int v) : value(v) { ++live; }
    Fragile(Fragile&& other) : value(other.value)
    {
        if (value == throwOnMove)
            throw std::runtime_error("Fragile: move refused");
        ++live;
    }
    Fragile(const Fragile&) = delete;
    ~Fragile() { --live; }
    int value;
};

// Over-aligned, so the channel's slots must honour alignof(T) > 64.
struct alignas(128) Wide
{
    std::int64_t value;
};
} // namespace

TEST_CASE("Channel: a send whose move throws sends nothing; the values around it arrive in order",
          "[channel]")
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{8}})
    {
        INFO("capacity " << capacity);
        {
            Channel<Fragile> channel(capacity);
            std::vector<int> sent;
            std::size_t next = 0; // the index in `sent` the next receive must return
            auto drain = [&]
            {
                while (channel.SizeApprox() > 0)
                {
                    std::optional<Fragile> value = channel.Receive();
                    REQUIRE(value);
                    REQUIRE(next < sent.size());
                    CHECK(value->value == sent[next++]);
                }
            };
            // Across several blocks of 31 slots, a refused send at every 7th value. A bounded
            // channel is drained whenever full, so the refused sends' room must have come back.
            for (int i = 0; i < 200; ++i)
            {
                Fragile::throwOnMove = i % 7 == 3 ? i : -1;
                bool threw = false;
                bool accepted = false;
                try
                {
                    accepted = channel.Send(Fragile(i)); // outside CHECK, which would catch
                }
                catch (const std::runtime_error&)
                {
                    threw = true;
                }
                Fragile::throwOnMove = -1;
                CHECK(threw == (i % 7 == 3));
                CHECK(accepted != threw);
                if (!threw)
                    sent.push_back(i);
                if (capacity != 0 && channel.SizeApprox() == capacity)
                    drain();
            }
            drain();
            CHECK(next == sent.size());
            // Refused sends left only skipped slots: nothing more to receive.
            channel.Close();
            CHECK_FALSE(channel.Receive());
        }
        CHECK(Fragile::live == 0);
    }
}

TEST_CASE("Channel: a receive whose move throws destroys that value and propagates", "[channel]")
{
    {
        Channel<Fragile> channel;
        for (int i = 0; i < 3; ++i)
            CHECK(channel.Send(Fragile(i)));
        Fragile::throwOnMove = 1;
        CHECK(channel.Receive()->value == 0);
        CHECK_THROWS_AS(channel.Receive(), std::runtime_error);
        Fragile::throwOnMove = -1;
        CHECK(Fragile::live == 1); // value 1 is gone; 2 is still queued
        CHECK(channel.Receive()->value == 2);
    }
    CHECK(Fragile::live == 0);
}

namespace
{
// Sends `value` with co_await; `outcome` is 1 if accepted, 2 if the send threw.
Fire SendFragileAsync(Channel<Fragile>& channel, int value, std::atomic<int>& outcome)
{
    try
    {
        outcome = co_await channel.SendAsync(Fragile(value)) ? 1 : 0;
    }
    catch (const std::runtime_error&)
    {
        outcome = 2;
    }
}
} // namespace

TEST_CASE("Channel: a SendAsync whose move throws propagates to the coroutine", "[channel]")
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{2}})
    {
        INFO("capacity " << capacity);
        {
            Channel<Fragile> channel(capacity);
            std::atomic<int> outcome{0};
            // Moving the value into the awaiter throws: it used to terminate the process there.
            Fragile::throwOnMove = 3;
            SendFragileAsync(channel, 3, outcome);
            Fragile::throwOnMove = -1;
            CHECK(outcome == 2);
            CHECK(Fragile::live == 0);
            SendFragileAsync(channel, 4, outcome);
            CHECK(outcome == 1);
            CHECK(channel.Receive()->value == 4);
        }
        CHECK(Fragile::live == 0);
    }
}

TEST_CASE("Channel keeps over-aligned values intact across blocks", "[channel]")
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{5}})
    {
        INFO("capacity " << capacity);
        Channel<Wide> channel(capacity);
        TC::Scheduler scheduler(2u);
        constexpr std::int64_t kCount = 1000;
        auto producer = scheduler.Start(
            [&]
            {
                for (std::int64_t i = 0; i < kCount; ++i)
                    channel.Send(Wide{i * 3});
            });
        std::int64_t wrong = 0;
        for (std::int64_t i = 0; i < kCount; ++i)
        {
            std::optional<Wide> value = channel.Receive();
            if (!value || value->value != i * 3)
                ++wrong;
        }
        producer.Join();
        CHECK(wrong == 0);
    }
}
