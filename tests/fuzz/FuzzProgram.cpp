// The fuzz interpreter. Program layout (every byte optional; missing bytes read as zero):
//   [0] shuffle seed of the host-pumped scheduler   [1] actor count (1..6)
//   per actor: [kind] [op count] then op count x [op] [arg]
//   the rest: driver steps, [op] [arg] each, run on the host between pumps.
// Kinds: task on the host-pumped scheduler, task on a 2-worker scheduler, converted thread,
// coroutine (resumed on the host scheduler). Single-waiter primitives (Mailbox taker,
// ManualResetEvent_s and AutoResetEvent_s waiter) belong to actor 0 alone, as their contracts
// require; op 14's arg bit 1 picks the auto-reset one (and, for a signaller, bit 2 a Reset).
// After the driver's steps it releases everything (sets, counts down, releases, closes) until
// every actor has finished; a wait that never returns is a lost wake-up and fails the run.
// Invariants: every actor finished; permits, channel values, mailbox values and latch counts add
// up; AutoResetEvent_s let no more waits pass than it was set; no task is left live and no
// coroutine frame is left.

#include "FuzzProgram.h"

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace TCFuzz
{
namespace
{
using namespace TC;
using namespace TC::Strands;
using namespace TC::Synchronization;
using std::chrono::microseconds;

constexpr int kMaxActors = 6;
// ASan's redzones make frames several times larger: give tasks room under it.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kStackSize = StackSize::Large;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr std::size_t kStackSize = StackSize::Large;
#else
constexpr std::size_t kStackSize = StackSize::Small;
#endif
#else
constexpr std::size_t kStackSize = StackSize::Small;
#endif
constexpr int kLatchCount = 4;
constexpr std::int64_t kSemaphoreInitial = 1;

class Reader
{
public:
    Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    std::uint8_t Next() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
    bool AtEnd() const noexcept { return pos_ >= size_; }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

struct Op
{
    std::uint8_t code;
    std::uint8_t arg;
};

enum class Kind : std::uint8_t
{
    HostTask,
    WorkerTask,
    Thread,
    Coroutine,
};

// Something a "destroy" op allocates, hands to the driver to be set, waits on and frees at once
// after its wait returned -- the lifetime every primitive documents.
struct Disposable
{
    bool latch;
    ManualResetEvent_s* event;
    Latch* countdown;
    AutoResetEvent_s* autoEvent = nullptr; // instead of `event` when set
};

struct World
{
    ManualResetEvent manual;
    AutoResetEvent autoReset;
    ManualResetEvent_s single; // waited on by actor 0 only
    AutoResetEvent_s singleAuto; // waited on by actor 0 only
    Latch latch{kLatchCount};
    std::atomic<int> latchLeft{kLatchCount};
    Semaphore semaphore{kSemaphoreInitial};
    Channel<std::int64_t> unbounded;
    Channel<std::int64_t> bounded{2};
    Mailbox<std::int64_t> box; // taken by actor 0 only

    // Accounting, checked at the end.
    std::atomic<std::int64_t> released{0}, acquired{0};
    std::atomic<std::int64_t> sentCount{0}, sentSum{0}, receivedCount{0}, receivedSum{0};
    std::atomic<std::int64_t> puts{0}, replaced{0}, takes{0};
    std::atomic<std::int64_t> autoSets{0}, autoPasses{0};
    std::atomic<std::uint64_t> operations{0}, waits{0}, timeouts{0};
    std::atomic<std::int64_t> nextValue{1};
    std::atomic<int> finished{0};
    std::atomic<int> liveCoroutines{0};
    std::atomic<int> position[kMaxActors]{}; // op index each actor is at, for the hang report

    std::mutex pendingLock;
    std::vector<Disposable> pending;

    void Hand(Disposable d)
    {
        std::lock_guard lock(pendingLock);
        pending.push_back(d);
    }
    // Sets what waiters handed over. The waiter may free each one as soon as its Set resumed it.
    void SetPending()
    {
        std::vector<Disposable> taken;
        {
            std::lock_guard lock(pendingLock);
            taken.swap(pending);
        }
        for (const Disposable& d : taken)
        {
            if (d.latch)
                d.countdown->CountDown();
            else if (d.autoEvent)
                d.autoEvent->Set();
            else
                d.event->Set();
        }
    }
};

Duration TimeoutOf(std::uint8_t arg) noexcept
{
    switch ((arg >> 2) & 3)
    {
    case 0:
        return Duration::Zero();
    case 1:
        return microseconds(-5); // negative: as zero
    case 2:
        return microseconds(100);
    default:
        return microseconds(2000);
    }
}

void SetSingleAuto(World& w) noexcept
{
    w.autoSets.fetch_add(1); // before the Set: a pass may follow at once
    w.singleAuto.Set();
}

void NoteWait(World& w, bool timedOut) noexcept
{
    w.waits.fetch_add(1, std::memory_order_relaxed);
    if (timedOut)
        w.timeouts.fetch_add(1, std::memory_order_relaxed);
}

// A wait on actor 0's AutoResetEvent_s returned; `passed` false on timeout.
void NoteAutoWait(World& w, bool passed) noexcept
{
    if (passed)
        w.autoPasses.fetch_add(1);
    NoteWait(w, !passed);
}

void NoteSent(World& w, std::int64_t value) noexcept
{
    w.sentCount.fetch_add(1);
    w.sentSum.fetch_add(value);
}

void NoteReceived(World& w, std::int64_t value) noexcept
{
    w.receivedCount.fetch_add(1);
    w.receivedSum.fetch_add(value);
}

void CountDownOnce(World& w) noexcept
{
    int left = w.latchLeft.load();
    while (left > 0 && !w.latchLeft.compare_exchange_weak(left, left - 1))
    {
    }
    if (left > 0)
        w.latch.CountDown();
}

// The operations that never wait, shared by every kind of actor and by the driver. True if
// `op` was one of them.
bool RunNonBlocking(World& w, Op op, bool mayTake)
{
    switch (op.code % 16)
    {
    case 2:
        w.manual.Set();
        return true;
    case 3:
        w.manual.Reset();
        return true;
    case 4:
        w.autoReset.Set();
        return true;
    case 5:
        CountDownOnce(w);
        return true;
    case 8:
        w.released.fetch_add(1);
        w.semaphore.Release(1);
        return true;
    case 11:
        if (op.arg % 8 == 0)
            w.bounded.Close();
        else if (op.arg % 8 == 1)
            w.unbounded.Close();
        else
        {
            std::int64_t value = 0;
            auto& channel = op.arg & 1 ? w.bounded : w.unbounded;
            if (channel.TryReceive(value) == ChannelStatus::Ok)
                NoteReceived(w, value);
        }
        return true;
    case 12:
        w.puts.fetch_add(1);
        if (w.box.Put(w.nextValue.fetch_add(1)))
            w.replaced.fetch_add(1);
        return true;
    case 13:
    case 14:
        if (!mayTake)
        {
            // Not actor 0: the single-waiter primitives are only signalled from here.
            if (op.code % 16 == 13)
            {
                w.puts.fetch_add(1);
                if (w.box.Put(w.nextValue.fetch_add(1)))
                    w.replaced.fetch_add(1);
            }
            else if ((op.arg & 6) == 6)
                w.singleAuto.Reset();
            else if (op.arg & 2)
                SetSingleAuto(w);
            else
                w.single.Set();
            return true;
        }
        return false;
    default:
        return false;
    }
}

// One op of a task or a converted thread.
void RunBlocking(World& w, Op op, bool actor0)
{
    w.operations.fetch_add(1, std::memory_order_relaxed);
    if (RunNonBlocking(w, op, actor0))
        return;
    switch (op.code % 16)
    {
    case 0:
        w.manual.Wait();
        NoteWait(w, false);
        break;
    case 1:
        w.autoReset.Wait();
        NoteWait(w, false);
        break;
    case 6:
        w.latch.Wait();
        NoteWait(w, false);
        break;
    case 7:
        if (op.arg & 1)
        {
            const bool got = w.semaphore.Acquire(TimeoutOf(op.arg));
            NoteWait(w, !got);
            if (got)
                w.acquired.fetch_add(1);
        }
        else
        {
            w.semaphore.Acquire();
            NoteWait(w, false);
            w.acquired.fetch_add(1);
        }
        break;
    case 9:
    {
        auto& channel = op.arg & 1 ? w.bounded : w.unbounded;
        const std::int64_t value = w.nextValue.fetch_add(1);
        if (op.arg & 2)
        {
            const ChannelStatus status = channel.Send(value, TimeoutOf(op.arg));
            NoteWait(w, status == ChannelStatus::TimedOut);
            if (status == ChannelStatus::Ok)
                NoteSent(w, value);
        }
        else
        {
            if (channel.Send(value))
                NoteSent(w, value);
            NoteWait(w, false);
        }
        break;
    }
    case 10:
    {
        auto& channel = op.arg & 1 ? w.bounded : w.unbounded;
        if (op.arg & 2)
        {
            std::int64_t value = 0;
            const ChannelStatus status = channel.Receive(value, TimeoutOf(op.arg));
            NoteWait(w, status == ChannelStatus::TimedOut);
            if (status == ChannelStatus::Ok)
                NoteReceived(w, value);
        }
        else
        {
            if (auto value = channel.Receive())
                NoteReceived(w, *value);
            NoteWait(w, false);
        }
        break;
    }
    case 13: // actor 0: take from the mailbox
        if (op.arg & 1)
        {
            const auto taken = w.box.Take(TimeoutOf(op.arg));
            NoteWait(w, !taken);
            if (taken)
                w.takes.fetch_add(1);
        }
        else
        {
            (void)w.box.Take();
            NoteWait(w, false);
            w.takes.fetch_add(1);
        }
        break;
    case 14: // actor 0: wait on a single-waiter event
        if (op.arg & 2)
        {
            if (op.arg & 1)
                NoteAutoWait(w, w.singleAuto.Wait(TimeoutOf(op.arg)));
            else
            {
                w.singleAuto.Wait();
                NoteAutoWait(w, true);
            }
        }
        else if (op.arg & 1)
            NoteWait(w, !w.single.Wait(TimeoutOf(op.arg)));
        else
        {
            w.single.Wait();
            NoteWait(w, false);
        }
        break;
    case 15:
    {
        // Destroy: wait on a fresh object, free it the moment the wait returns.
        if (op.arg & 1)
        {
            auto* latch = new Latch(1);
            w.Hand({true, nullptr, latch});
            latch->Wait();
            delete latch;
        }
        else if (op.arg & 2)
        {
            auto* event = new AutoResetEvent_s;
            w.Hand({false, nullptr, nullptr, event});
            event->Wait();
            delete event;
        }
        else
        {
            auto* event = new ManualResetEvent_s;
            w.Hand({false, event, nullptr});
            event->Wait();
            delete event;
        }
        NoteWait(w, false);
        break;
    }
    default:
        break;
    }
}

// A coroutine actor: the same ops through the co_await forms. Starts by moving to the host.
DetachedTask RunCoroutine(World& w, Scheduler& host, std::vector<Op> ops, bool actor0, int index)
{
    w.liveCoroutines.fetch_add(1);
    co_await host.Schedule();
    for (std::size_t i = 0; i < ops.size(); ++i)
    {
        const Op op = ops[i];
        w.position[index].store(static_cast<int>(i));
        w.operations.fetch_add(1, std::memory_order_relaxed);
        if (RunNonBlocking(w, op, actor0))
            continue;
        switch (op.code % 16)
        {
        case 0:
            co_await w.manual;
            NoteWait(w, false);
            break;
        case 1:
            co_await w.autoReset;
            NoteWait(w, false);
            break;
        case 6:
            co_await w.latch;
            NoteWait(w, false);
            break;
        case 7:
            if (op.arg & 1)
            {
                const bool got = co_await w.semaphore.AcquireAsync(TimeoutOf(op.arg));
                NoteWait(w, !got);
                if (got)
                    w.acquired.fetch_add(1);
            }
            else
            {
                co_await w.semaphore.AcquireAsync();
                NoteWait(w, false);
                w.acquired.fetch_add(1);
            }
            break;
        case 9:
        {
            auto& channel = op.arg & 1 ? w.bounded : w.unbounded;
            const std::int64_t value = w.nextValue.fetch_add(1);
            if (co_await channel.SendAsync(value))
                NoteSent(w, value);
            NoteWait(w, false);
            break;
        }
        case 10:
        {
            auto& channel = op.arg & 1 ? w.bounded : w.unbounded;
            if (auto value = co_await channel.ReceiveAsync())
                NoteReceived(w, *value);
            NoteWait(w, false);
            break;
        }
        case 13:
            if (op.arg & 1)
            {
                const auto taken = co_await w.box.TakeAsync(TimeoutOf(op.arg));
                NoteWait(w, !taken);
                if (taken)
                    w.takes.fetch_add(1);
            }
            else
            {
                (void)co_await w.box.TakeAsync();
                NoteWait(w, false);
                w.takes.fetch_add(1);
            }
            break;
        case 14:
            if (op.arg & 2)
            {
                if (op.arg & 1)
                    NoteAutoWait(w, co_await w.singleAuto.WaitAsync(TimeoutOf(op.arg)));
                else
                {
                    co_await w.singleAuto;
                    NoteAutoWait(w, true);
                }
            }
            else if (op.arg & 1)
                NoteWait(w, !(co_await w.single.WaitAsync(TimeoutOf(op.arg))));
            else
            {
                co_await w.single.WaitAsync();
                NoteWait(w, false);
            }
            break;
        case 15:
        {
            if (op.arg & 2)
            {
                auto* event = new AutoResetEvent_s;
                w.Hand({false, nullptr, nullptr, event});
                co_await event->WaitAsync();
                delete event;
            }
            else
            {
                auto* event = new ManualResetEvent_s;
                w.Hand({false, event, nullptr});
                co_await event->WaitAsync();
                delete event;
            }
            NoteWait(w, false);
            break;
        }
        default:
            break;
        }
    }
    w.position[index].store(-1);
    w.liveCoroutines.fetch_sub(1);
    w.finished.fetch_add(1);
}

[[noreturn]] void Fail(const char* what, const World& w, int actors, const std::uint8_t* data,
                       std::size_t size)
{
    std::fprintf(stderr, "fuzz: INVARIANT BROKEN: %s\n  actors %d finished %d; positions:", what,
                 actors, w.finished.load());
    for (int i = 0; i < actors; ++i)
        std::fprintf(stderr, " %d", w.position[i].load());
    std::fprintf(stderr, "\n  program (%zu bytes):", size);
    for (std::size_t i = 0; i < size; ++i)
        std::fprintf(stderr, " %02x", data[i]);
    std::fprintf(stderr, "\n");
    std::abort();
}
} // namespace

RunStats RunFuzzProgram(const std::uint8_t* data, std::size_t size)
{
    EnableTimers();
    Reader in(data, size);
    SchedulerOptions hostOptions;
    hostOptions.shuffleSeed = std::uint64_t{in.Next()} + 1;
    hostOptions.stackSize = kStackSize;
    hostOptions.name = "fuzz-host";
    SchedulerOptions workerOptions;
    workerOptions.workerCount = 2;
    workerOptions.stackSize = kStackSize;
    workerOptions.name = "fuzz-workers";

    auto world = std::make_unique<World>();
    World& w = *world;
    const int actors = in.Next() % kMaxActors + 1;
    struct Actor
    {
        Kind kind;
        std::vector<Op> ops;
    };
    std::vector<Actor> plan(static_cast<std::size_t>(actors));
    for (Actor& actor : plan)
    {
        actor.kind = static_cast<Kind>(in.Next() % 4);
        const int count = in.Next() % 8 + 1;
        for (int i = 0; i < count; ++i)
        {
            const std::uint8_t code = in.Next();
            actor.ops.push_back({code, in.Next()});
        }
    }

    {
        Scheduler host(hostOptions);
        Scheduler workers(workerOptions);
        std::vector<JoinHandle> tasks;
        std::vector<std::thread> threads;
        for (int i = 0; i < actors; ++i)
        {
            const Actor& actor = plan[static_cast<std::size_t>(i)];
            auto body = [&w, ops = actor.ops, i]
            {
                for (std::size_t k = 0; k < ops.size(); ++k)
                {
                    w.position[i].store(static_cast<int>(k));
                    RunBlocking(w, ops[k], i == 0);
                }
                w.position[i].store(-1);
                w.finished.fetch_add(1);
            };
            switch (actor.kind)
            {
            case Kind::HostTask:
                tasks.push_back(host.Start(body));
                break;
            case Kind::WorkerTask:
                tasks.push_back(workers.Start(body));
                break;
            case Kind::Thread:
                threads.emplace_back(body);
                break;
            case Kind::Coroutine:
                RunCoroutine(w, host, actor.ops, i == 0, i);
                break;
            }
        }

        // The driver's steps, each followed by a short pump of the host.
        while (!in.AtEnd())
        {
            const Op op{in.Next(), in.Next()};
            w.operations.fetch_add(1, std::memory_order_relaxed);
            switch (op.code % 8)
            {
            case 0:
                w.manual.Set();
                break;
            case 1:
                w.autoReset.Set();
                break;
            case 2:
                (void)RunNonBlocking(w, {8, 0}, false);
                break;
            case 3:
                CountDownOnce(w);
                break;
            case 4:
            {
                const std::int64_t value = w.nextValue.fetch_add(1);
                if (w.unbounded.TrySend(value) == ChannelStatus::Ok)
                    NoteSent(w, value);
                break;
            }
            case 5:
                (void)RunNonBlocking(w, {11, static_cast<std::uint8_t>(op.arg | 2)}, false);
                break;
            case 6:
                (void)RunNonBlocking(w, {static_cast<std::uint8_t>(op.arg & 1 ? 12 : 14), op.arg},
                                     false);
                break;
            default:
                w.SetPending();
                break;
            }
            host.RunPending(op.arg % 4 + 1);
            if (op.arg & 0x80)
                std::this_thread::yield();
        }

        // Release everything until every actor has finished.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        w.unbounded.Close();
        w.bounded.Close();
        while (w.finished.load() < actors)
        {
            w.manual.Set();
            w.autoReset.Set();
            w.single.Set();
            SetSingleAuto(w);
            if (const int left = w.latchLeft.exchange(0); left > 0)
                w.latch.CountDown(static_cast<std::size_t>(left));
            w.released.fetch_add(1);
            w.semaphore.Release(1);
            w.puts.fetch_add(1);
            if (w.box.Put(w.nextValue.fetch_add(1)))
                w.replaced.fetch_add(1);
            w.SetPending();
            host.RunPending();
            if (std::chrono::steady_clock::now() > deadline)
                Fail("an actor never finished (lost wake-up or hang)", w, actors, data, size);
            std::this_thread::yield();
        }
        if (const int left = w.latchLeft.exchange(0); left > 0)
            w.latch.CountDown(static_cast<std::size_t>(left));
        for (JoinHandle& task : tasks)
            task.Join();
        for (std::thread& thread : threads)
            thread.join();
        // A joined task leaves the live count just after its callable returned (on its worker's
        // next switch), so give the count a moment.
        const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while ((host.LiveTasks() != 0 || workers.LiveTasks() != 0) &&
               std::chrono::steady_clock::now() < settle)
        {
            host.RunUntilIdle();
            std::this_thread::yield();
        }
        if (host.LiveTasks() != 0 || workers.LiveTasks() != 0)
            Fail("a task is still live after every actor finished", w, actors, data, size);
    }

    // Counts add up.
    if (w.liveCoroutines.load() != 0)
        Fail("a coroutine frame is left", w, actors, data, size);
    if (kSemaphoreInitial + w.released.load() != w.acquired.load() + w.semaphore.Available())
        Fail("semaphore permits do not add up", w, actors, data, size);
    for (auto* channel : {&w.unbounded, &w.bounded})
    {
        std::int64_t value = 0;
        ChannelStatus status;
        while ((status = channel->TryReceive(value)) == ChannelStatus::Ok)
            NoteReceived(w, value);
        if (status != ChannelStatus::Closed)
            Fail("a closed, drained channel does not say Closed", w, actors, data, size);
    }
    if (w.sentCount.load() != w.receivedCount.load() || w.sentSum.load() != w.receivedSum.load())
        Fail("channel values sent and received do not add up", w, actors, data, size);
    if (w.box.TryTake())
        w.takes.fetch_add(1);
    if (w.puts.load() - w.replaced.load() != w.takes.load())
        Fail("mailbox values put and taken do not add up", w, actors, data, size);
    if (w.autoPasses.load() > w.autoSets.load())
        Fail("AutoResetEvent_s let more waits pass than it was set", w, actors, data, size);
    if (w.latch.Count() != 0 || w.latchLeft.load() != 0)
        Fail("the latch did not reach zero", w, actors, data, size);
    if (!w.pending.empty())
        Fail("a handed-over object was never set", w, actors, data, size);
    return {w.operations.load(), w.waits.load(), w.timeouts.load()};
}
} // namespace TCFuzz
