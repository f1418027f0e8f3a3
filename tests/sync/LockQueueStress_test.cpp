// Stress of the locks, counters and queues: driven across worker threads, converted threads and
// coroutines with millions of operations in Release (scaled down in Debug and under sanitizers).
// Checked mode catches double resumes; counts catch lost or duplicated wake-ups; a lost wake-up
// hangs, which the per-test deadline reports.

#include "PermitStress.h"
#include "SyncTestSupport.h"

#include <TC/Synchronization.h>
#include <TC/detail/SpinLock.h> // CpuRelax

#include <catch2/catch.hpp>

#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using namespace TC::Synchronization;
using namespace TC::SyncTests;

TEST_CASE("Stress: Mutex and Semaphore keep a plain counter exact", "[stress][mutex]")
{
    const std::int64_t perWorker = Scaled(250000);
    Mutex mutex;
    Semaphore sem(1);
    std::int64_t counterM = 0;
    std::int64_t counterS = 0;
    Waiters w;
    auto body = [&]
    {
        for (std::int64_t i = 0; i < perWorker; ++i)
        {
            {
                std::lock_guard guard(mutex);
                ++counterM;
            }
            sem.Acquire();
            ++counterS;
            sem.Release();
        }
    };
    for (int i = 0; i < 4; ++i)
        w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, body, [] { return std::suspend_never{}; });
    struct Coro
    {
        static Fire Run(Waiters& w, Mutex& mutex, Semaphore& sem, std::int64_t& m, std::int64_t& s,
                        std::int64_t n, std::atomic<bool>& done)
        {
            co_await w.GetScheduler().Schedule();
            for (std::int64_t i = 0; i < n; ++i)
            {
                co_await mutex.LockAsync();
                ++m;
                mutex.Unlock();
                co_await sem.AcquireAsync();
                ++s;
                sem.Release();
            }
            done = true;
        }
    };
    std::atomic<bool> coroDone{false};
    Coro::Run(w, mutex, sem, counterM, counterS, perWorker, coroDone);
    CHECK(w.WaitFinished(5, 120s));
    CHECK(Eventually([&] { return coroDone.load(); }, 60s));
    std::lock_guard guard(mutex);
    CHECK(counterM == 6 * perWorker);
    CHECK(counterS == 6 * perWorker);
}

namespace
{
// The coroutine acquirer: untimed and timed awaits (polling has no coroutine form).
Fire AcquireAsCoroutine(Waiters& w, PermitTally<Semaphore>& tally)
{
    co_await w.GetScheduler().Schedule();
    std::int64_t local = 0;
    for (std::uint64_t round = 0;; ++round)
    {
        bool got = true;
        if (tally.Untimed(round))
            co_await tally.gate.AcquireAsync();
        else
            got = co_await tally.gate.AcquireAsync(std::chrono::microseconds(round % 16));
        if (!tally.Count(got, local))
            break;
    }
    tally.Finish(local);
}
} // namespace

// Three tasks, a thread and a coroutine acquire from a counting semaphore (untimed, timed with
// timeouts of 0-15 us, polling) while two threads release one or three permits at a time: no
// permit is made or lost (acquired + left == initial + released) and every acquirer finishes.
TEST_CASE("Stress: a counting Semaphore under racing Releases and timed acquires conserves permits",
          "[stress][semaphore][timeout]")
{
    TC::EnableTimers();
    constexpr std::int64_t kInitial = 2;
    Semaphore sem(kInitial);
    RunPermitConservationStress(
        sem, kInitial, Scaled(100000),
        [](Semaphore& s, std::uint64_t round, bool untimed)
        {
            if (untimed)
            {
                s.Acquire();
                return true;
            }
            if (round % 4 == 1)
                return s.TryAcquire();
            return s.Acquire(std::chrono::microseconds(round % 16));
        },
        [](Waiters& w, PermitTally<Semaphore>& tally) { AcquireAsCoroutine(w, tally); });
}

// The waiter may destroy the semaphore as soon as its Acquire returns, whichever way the permit
// reached it -- handed over by a Release, taken in its re-check, or taken outright -- while that
// Release may still be running (ASan checks the accesses).
TEST_CASE("Stress: a Semaphore destroyed by its waiter as soon as Acquire returns",
          "[stress][semaphore]")
{
    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler scheduler(2u);
    std::int64_t done = 0;
    bool allAcquired = true; // written by the one waiter of each round, read after its Join
    for (std::int64_t i = 1; i <= rounds; ++i)
    {
        auto* sem = new Semaphore(0);
        AutoResetEvent_s finished;
        auto waiter = scheduler.Start(
            [&, sem, timed = i % 2 == 0]
            {
                if (timed)
                    allAcquired &= sem->Acquire(std::chrono::seconds(60));
                else
                    sem->Acquire();
                delete sem;
                finished.Set();
            });
        if (i % 3 == 0)
            std::this_thread::yield(); // now and then the waiter is queued first
        sem->Release();                // the last access of this thread to the semaphore
        finished.Wait();
        waiter.Join();
        ++done;
    }
    CHECK(allAcquired);
    CHECK(done == rounds);
}

TEST_CASE("Stress: ConditionVariable producer/consumer", "[stress][cv]")
{
    const std::int64_t items = Scaled(300000);
    Mutex mutex;
    ConditionVariable notEmpty;
    ConditionVariable notFull;
    std::vector<std::int64_t> queue;
    bool finished = false;
    std::int64_t consumed = 0;
    std::int64_t sum = 0;
    Waiters w;
    auto producer = [&](std::int64_t from, std::int64_t to)
    {
        for (std::int64_t i = from; i < to; ++i)
        {
            std::unique_lock lock(mutex);
            notFull.Wait(lock, [&] { return queue.size() < 64; });
            queue.push_back(i);
            notEmpty.NotifyOne();
        }
    };
    auto consumer = [&]
    {
        std::unique_lock lock(mutex);
        for (;;)
        {
            notEmpty.Wait(lock, [&] { return !queue.empty() || finished; });
            if (queue.empty())
                return;
            sum += queue.back();
            queue.pop_back();
            ++consumed;
            notFull.NotifyOne();
        }
    };
    w.Start(
        WaiterKind::Task, [&] { producer(0, items / 2); }, [] { return std::suspend_never{}; });
    w.Start(
        WaiterKind::Thread, [&] { producer(items / 2, items); },
        [] { return std::suspend_never{}; });
    for (int i = 0; i < 2; ++i)
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, consumer, [] { return std::suspend_never{}; });
    CHECK(w.WaitFinished(2, 120s)); // the producers
    {
        std::lock_guard guard(mutex);
        finished = true;
    }
    notEmpty.NotifyAll();
    CHECK(w.WaitFinished(5, 60s));
    CHECK(consumed == items);
    CHECK(sum == items * (items - 1) / 2);
}

TEST_CASE("Stress: Barrier phases and WaitGroup rounds", "[stress][barrier]")
{
    const std::int64_t phases = Scaled(40000);
    Barrier barrier(3);
    std::atomic<std::int64_t> serial{0};
    Waiters w;
    auto body = [&]
    {
        for (std::int64_t i = 0; i < phases; ++i)
            if (barrier.ArriveAndWait())
                serial.fetch_add(1);
    };
    w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Task, body, [] { return std::suspend_never{}; });
    w.Start(WaiterKind::Thread, body, [] { return std::suspend_never{}; });
    CHECK(w.WaitFinished(3, 120s));
    CHECK(serial == phases);

    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler& scheduler = w.GetScheduler();
    std::atomic<std::int64_t> work{0};
    for (std::int64_t r = 0; r < rounds; ++r)
    {
        WaitGroup group;
        group.Add(3);
        for (int i = 0; i < 3; ++i)
            scheduler
                .Start(
                    [&]
                    {
                        work.fetch_add(1);
                        group.Done();
                    })
                .Detach();
        group.Wait(); // the converted main thread made it: resumed last, then destroys it
    }
    CHECK(work == 3 * rounds);
}

TEST_CASE("Stress: Mailbox<T> request/reply", "[stress][mailbox]")
{
    const std::int64_t requests = Scaled(200000);
    Mailbox<std::int64_t> in;
    Mailbox<std::int64_t> out;
    TC::Scheduler scheduler(2u);
    auto service = scheduler.Start(
        [&]
        {
            for (std::int64_t r; (r = in.Take()) > 0;)
                out.Put(r * 2);
        });
    std::int64_t sum = 0;
    std::thread client(
        [&]
        {
            for (std::int64_t i = 1; i <= requests; ++i)
            {
                in.Put(i);
                sum += out.Take();
            }
            in.Put(-1);
        });
    client.join();
    service.Join();
    CHECK(sum == requests * (requests + 1));
}

// A coroutine taker cannot loop over a spurious resume the way Take does, so a Put must never
// reach the taker's next wait: here the taker often takes the value through its re-check or in
// await_ready while the Put that stored it is still on its way to the waiter slot.
TEST_CASE("Stress: Mailbox<T> request/reply, a coroutine taker", "[stress][mailbox]")
{
    const std::int64_t requests = Scaled(200000);
    Mailbox<std::int64_t> in;
    Mailbox<std::int64_t> out;
    TC::Scheduler scheduler(2u);
    std::atomic<bool> served{false};
    struct Service
    {
        static Fire Run(TC::Scheduler& scheduler, Mailbox<std::int64_t>& in,
                        Mailbox<std::int64_t>& out, std::atomic<bool>& served)
        {
            co_await scheduler.Schedule();
            for (std::int64_t r; (r = co_await in.TakeAsync()) > 0;)
                out.Put(r * 2);
            served = true;
        }
    };
    Service::Run(scheduler, in, out, served);
    std::int64_t sum = 0;
    for (std::int64_t i = 1; i <= requests; ++i)
    {
        in.Put(i);
        sum += out.Take();
    }
    in.Put(-1);
    CHECK(Eventually([&] { return served.load(); }));
    CHECK(sum == requests * (requests + 1));
}

// The taker may destroy the mailbox as soon as Take returns, also when it found the value
// without suspending while the Put that stored it was still on its way to Resume() (ASan).
TEST_CASE("Stress: a Mailbox<T> destroyed by its taker as soon as Take returns", "[stress][mailbox]")
{
    const std::int64_t rounds = Scaled(20000);
    TC::Scheduler scheduler(2u);
    std::int64_t sum = 0;
    for (std::int64_t i = 1; i <= rounds; ++i)
    {
        auto* box = new Mailbox<std::int64_t>;
        AutoResetEvent_s taken;
        std::int64_t value = 0;
        auto taker = scheduler.Start(
            [&, box, poll = i % 2 == 0]
            {
                if (poll) // takes the value the moment Put has stored it, before Put resumes
                {
                    std::optional<std::int64_t> got;
                    while (!(got = box->TryTake()))
                        std::this_thread::yield();
                    value = *got;
                }
                else
                    value = box->Take();
                delete box;
                taken.Set();
            });
        box->Put(i); // the last access of this thread to the box
        taken.Wait();
        taker.Join();
        sum += value;
    }
    CHECK(sum == rounds * (rounds + 1) / 2);
}

namespace
{
// What the taker of MailboxRacingPuts has seen: each putter's last sequence number, and counts.
struct MailboxTakes
{
    static constexpr int kPutters = 2;
    std::int64_t last[kPutters] = {0, 0};
    std::int64_t taken = 0;
    std::int64_t timedOut = 0;
    bool ordered = true;
    std::atomic<std::int64_t> progress{0}; // the putters pace themselves on it
    std::atomic<bool> finished{false};

    // Records one take; false for the sentinel.
    bool Record(std::int64_t value)
    {
        if (value < 0)
            return false;
        const auto putter = static_cast<int>(value >> 40);
        const std::int64_t sequence = value & ((std::int64_t{1} << 40) - 1);
        ordered &= sequence > last[putter];
        last[putter] = sequence;
        progress.store(++taken, std::memory_order_relaxed);
        return true;
    }
};

// The taker of MailboxRacingPuts as a coroutine: the awaiter forms of the same three takes.
Fire TakeAsCoroutine(TC::Scheduler& scheduler, Mailbox<std::int64_t>& box, MailboxTakes& takes)
{
    co_await scheduler.Schedule();
    for (std::uint64_t round = 0;; ++round)
    {
        std::optional<std::int64_t> value;
        if (round % 3 == 0)
            value = co_await box.TakeAsync();
        else if (round % 3 == 1)
            value = co_await box.TakeAsync(std::chrono::microseconds(round % 16));
        else if (!(value = box.TryTake()))
            co_await scheduler.Schedule();
        if (!value)
            takes.timedOut += round % 3 == 1;
        else if (!takes.Record(*value))
            break;
    }
    takes.finished = true;
}

// Two threads Put while one taker takes, mixing untimed, timed (timeouts of 0-15 us, so that
// the timer's claim races a Put's) and polling takes: every value is taken at most once and in
// each putter's order, and every Put's value is either taken or reported replaced by a later Put.
void MailboxRacingPuts(bool coroutineTaker)
{
    TC::EnableTimers();
    const std::int64_t perPutter = Scaled(200000);
    Mailbox<std::int64_t> box;
    MailboxTakes takes;
    TC::Scheduler scheduler(2u);
    std::optional<TC::JoinHandle> taker;
    if (coroutineTaker)
        TakeAsCoroutine(scheduler, box, takes);
    else
        taker = scheduler.Start(
            [&]
            {
                for (std::uint64_t round = 0;; ++round)
                {
                    std::optional<std::int64_t> value;
                    if (round % 3 == 0)
                        value = box.Take();
                    else if (round % 3 == 1)
                        value = box.Take(std::chrono::microseconds(round % 16));
                    else if (!(value = box.TryTake()))
                        TC::YieldTask();
                    if (!value)
                        takes.timedOut += round % 3 == 1;
                    else if (!takes.Record(*value))
                        return;
                }
            });
    std::atomic<std::int64_t> replaced{0};
    std::vector<std::thread> putters;
    for (int p = 0; p < MailboxTakes::kPutters; ++p)
        putters.emplace_back(
            [&, p]
            {
                std::int64_t local = 0;
                for (std::int64_t i = 1; i <= perPutter; ++i)
                {
                    const std::int64_t seen = takes.progress.load(std::memory_order_relaxed);
                    local += box.Put((std::int64_t{p} << 40) | i);
                    // Mostly wait (a while) for the taker, so that Puts meet a suspended taker,
                    // a timing-out one and a full slot, not only each other.
                    for (int spin = 0; spin < 4000 && i % 8 != 0; ++spin)
                        if (takes.progress.load(std::memory_order_relaxed) != seen)
                            break;
                        else
                            TC::detail::CpuRelax();
                }
                replaced += local;
            });
    for (auto& putter : putters)
        putter.join();
    const bool sentinelReplaced = box.Put(-1); // the taker stops at it
    if (taker)
        taker->Join();
    else
        REQUIRE(Eventually([&] { return takes.finished.load(); }));
    INFO("taken " << takes.taken << ", replaced " << replaced.load() << ", timed out "
                  << takes.timedOut);
    CHECK(takes.ordered);
    CHECK(takes.taken + replaced.load() + sentinelReplaced == MailboxTakes::kPutters * perPutter);
    CHECK(takes.taken > 0);
    CHECK_FALSE(box.IsSuspended());
}
} // namespace

TEST_CASE("Stress: Mailbox<T> with racing Puts and timed takes loses and repeats nothing",
          "[stress][mailbox][timeout]")
{
    SECTION("a task taker")
    {
        MailboxRacingPuts(false);
    }
    SECTION("a coroutine taker")
    {
        MailboxRacingPuts(true);
    }
}

namespace
{
// Not trivially copyable (a user-provided copy): constructed into and moved out of its slot.
struct SlotValue
{
    SlotValue(std::int64_t v) : value(v) {}
    SlotValue(const SlotValue& other) : value(other.value) {}
    SlotValue& operator=(const SlotValue& other) = default;
    operator std::int64_t() const { return value; }
    std::int64_t value;
};

template <class Value>
void ChannelMpmcStress()
{
    for (std::size_t capacity : {std::size_t{0}, std::size_t{16}})
    {
        INFO("capacity " << capacity);
        const std::int64_t perProducer = Scaled(300000);
        Channel<Value> channel(capacity);
        std::atomic<std::int64_t> sum{0};
        std::atomic<std::int64_t> count{0};
        Waiters w;
        auto producer = [&]
        {
            for (std::int64_t i = 1; i <= perProducer; ++i)
                channel.Send(i);
        };
        auto consumer = [&]
        {
            std::int64_t local = 0, n = 0;
            while (auto v = channel.Receive())
            {
                local += static_cast<std::int64_t>(*v);
                ++n;
            }
            sum += local;
            count += n;
        };
        w.Start(WaiterKind::Task, producer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Thread, producer, [] { return std::suspend_never{}; });
        CHECK(Eventually([] { return true; }));
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Task, consumer, [] { return std::suspend_never{}; });
        w.Start(WaiterKind::Thread, consumer, [] { return std::suspend_never{}; });
        struct Coro
        {
            static Fire Run(Waiters& w, Channel<Value>& ch, std::atomic<std::int64_t>& sum,
                            std::atomic<std::int64_t>& count, std::atomic<bool>& done)
            {
                co_await w.GetScheduler().Schedule();
                while (auto v = co_await ch.ReceiveAsync())
                {
                    sum += static_cast<std::int64_t>(*v);
                    count += 1;
                }
                done = true;
            }
        };
        std::atomic<bool> coroDone{false};
        Coro::Run(w, channel, sum, count, coroDone);
        CHECK(w.WaitFinished(2, 120s)); // the producers
        channel.Close();
        CHECK(w.WaitFinished(5, 60s));
        CHECK(Eventually([&] { return coroDone.load(); }, 60s));
        CHECK(count == 2 * perProducer);
        CHECK(sum == perProducer * (perProducer + 1));
    }
}
} // namespace

TEST_CASE("Stress: Channel MPMC, bounded and unbounded", "[stress][channel]")
{
    SECTION("trivially copyable values")
    {
        ChannelMpmcStress<std::int64_t>();
    }
    SECTION("values with a user-provided copy")
    {
        ChannelMpmcStress<SlotValue>();
    }
}

TEST_CASE("Stress: a value sent before Close is received, never dropped as closed and drained",
          "[stress][channel]")
{
    // Each round a fresh channel: one thread Sends then Closes it while this one Receives, each
    // after a short random spin so that the three land in every order. Receive must return the
    // value -- it was sent before the Close -- yet 0.01% of rounds said "closed and drained" while
    // the receiver looked at the count before the Send and at the flag after the Close (the count
    // is now read again once the flag says closed).
    const std::int64_t rounds = Scaled(2000000);
    std::atomic<Channel<int>*> current{nullptr};
    std::atomic<std::int64_t> started{0};
    std::atomic<std::int64_t> finished{0};
    auto spin = [](std::uint32_t& seed)
    {
        seed = seed * 1103515245u + 12345u;
        for (std::uint32_t i = (seed >> 16) % 40; i > 0; --i)
            TC::detail::CpuRelax();
    };
    std::thread sender(
        [&]
        {
            std::uint32_t seed = 1;
            for (std::int64_t round = 1; round <= rounds; ++round)
            {
                while (started.load(std::memory_order_acquire) != round)
                {
                }
                Channel<int>* channel = current.load(std::memory_order_relaxed);
                spin(seed);
                channel->Send(42);
                channel->Close();
                finished.store(round, std::memory_order_release);
            }
        });
    std::int64_t dropped = 0;
    std::int64_t received = 0;
    std::uint32_t seed = 7;
    for (std::int64_t round = 1; round <= rounds; ++round)
    {
        Channel<int> channel;
        current.store(&channel, std::memory_order_relaxed);
        started.store(round, std::memory_order_release);
        spin(seed);
        const std::optional<int> value = channel.Receive();
        while (finished.load(std::memory_order_acquire) != round)
        {
        }
        int left = 0;
        if (value)
            ++received;
        else if (channel.TryReceive(left) == ChannelStatus::Ok)
            ++dropped; // "closed and drained" with the value still inside
    }
    sender.join();
    CHECK(dropped == 0);
    CHECK(received == rounds);
}
