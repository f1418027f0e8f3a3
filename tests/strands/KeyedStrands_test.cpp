// KeyedStrands: one strand per key, retirement, reuse counts, the hook's key, and destruction
// from inside a key's task.

#include "StrandsTestSupport.h"

#include <TC/Core.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;
using TCTest::ManualExecutor;

TEST_CASE("A key's strand retires when its queue runs dry and is kept for reuse",
          "[strands][keyed]")
{
    ManualExecutor base;
    KeyedStrands<int> strands(base);
    int ran = 0;
    strands.Post(1, [&] { ++ran; });
    strands.Post(2, [&] { ++ran; });
    CHECK(strands.ActiveKeys() == 2);
    CHECK(strands.StrandsMade() == 2);
    base.RunAll();
    CHECK(ran == 2);
    CHECK(strands.ActiveKeys() == 0);
    CHECK(strands.KeptStrands() == 2);
    CHECK(strands.SpareNodes() == 2);
    CHECK(strands.Idle());

    // Idle keys coming back take kept strands: nothing new is made.
    for (int round = 0; round < 10; ++round)
    {
        strands.Post(round + 10, [&] { ++ran; });
        base.RunAll();
    }
    CHECK(strands.StrandsMade() == 2);
    CHECK(ran == 12);

    // Up to 32 are kept.
    for (int key = 0; key < 40; ++key)
        strands.Post(key, [&] { ++ran; });
    CHECK(strands.ActiveKeys() == 40);
    CHECK(strands.StrandsMade() == 40);
    base.RunAll();
    CHECK(strands.KeptStrands() == 32);
    CHECK(strands.SpareNodes() == 32);
}

TEST_CASE("The keyed hook is given the key and the kind", "[strands][keyed]")
{
    ManualExecutor base;
    std::vector<std::pair<std::string, TaskKind>> seen;
    KeyedStrandsOptions<std::string> options;
    options.aroundTask = [&](const std::string& key, RunTask& task) {
        seen.emplace_back(key, task.Kind());
        task();
    };
    KeyedStrands<std::string> strands(base, std::move(options));
    strands.Post("model-a", [] {});
    auto hop = [](KeyedStrands<std::string>* s) -> DetachedTask {
        co_await s->ResumeOn("model-b");
    };
    hop(&strands);
    base.RunAll();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == std::make_pair(std::string("model-a"), TaskKind::Call));
    CHECK(seen[1] == std::make_pair(std::string("model-b"), TaskKind::Resumption));
}

TEST_CASE("After Seal a key refuses offers whether its pump is queued or it has none; posts run "
          "in order until Close",
          "[strands][keyed]")
{
    ManualExecutor base;
    KeyedStrands<int> strands(base);
    std::vector<std::string> ran;
    auto record = [&ran](const char* what) { return [&ran, what] { ran.emplace_back(what); }; };
    strands.Post(1, record("a"));           // makes key 1's strand and queues its pump on the base
    strands.Post(1, record("b"));           // the pump is queued: the inline way
    CHECK(strands.TryPost(1, record("c"))); // an offer before the seal is taken
    strands.Seal();
    // Key 1's pump is queued with room in its queue, so an offer would fit inline: refused all
    // the same, as for key 2, which has no strand.
    CHECK_FALSE(strands.TryPost(1, record("refused on key 1")));
    CHECK_FALSE(strands.TryPost(2, record("refused on key 2")));
    strands.Post(1, record("d")); // Post is admitted until Close
    strands.Post(3, record("e")); // also for a key that had no strand
    base.RunAll();
    CHECK(ran == std::vector<std::string>{"a", "b", "c", "d", "e"});
    CHECK(strands.Idle());
    CHECK(strands.KeptStrands() == 1); // key 3's strand, made after the seal, is not kept

    strands.Post(1, record("f")); // a kept strand comes back for key 1
    CHECK(strands.ActiveKeys() == 1);
    strands.Close();
    strands.Post(1, record("after Close")); // dropped, never run
    CHECK_FALSE(strands.TryPost(1, record("after Close")));
    base.RunAll();
    CHECK(ran == std::vector<std::string>{"a", "b", "c", "d", "e"}); // "f" was dropped by Close
}

TEST_CASE("Keys are serialised separately and never get two strands", "[strands][keyed]")
{
    Scheduler scheduler(2u);
    constexpr int keys = 8;
    const int perKey = TCTest::Scaled(4000);
    std::vector<std::atomic<int>> inside(keys);
    std::vector<int> counts(keys, 0);
    std::atomic<int> overlaps{0};
    std::atomic<int> notHere{0};
    {
        KeyedStrands<int> strands(scheduler);
        std::vector<std::thread> producers;
        for (int t = 0; t < 2; ++t)
            producers.emplace_back([&] {
                for (int i = 0; i < perKey; ++i)
                    for (int key = 0; key < keys; ++key)
                        strands.Post(key, [&, key] {
                            auto k = static_cast<std::size_t>(key);
                            if (inside[k].fetch_add(1) != 0)
                                overlaps.fetch_add(1);
                            ++counts[k];
                            if (!strands.RunningHere(key))
                                notHere.fetch_add(1);
                            inside[k].fetch_sub(1);
                        });
            });
        for (auto& producer : producers)
            producer.join();
        strands.WaitIdle();
        CHECK(strands.KeptStrands() <= 32);
    }
    CHECK(overlaps.load() == 0);
    CHECK(notHere.load() == 0);
    for (int key = 0; key < keys; ++key)
        CHECK(counts[static_cast<std::size_t>(key)] == 2 * perKey);
}

namespace
{
DetachedTask PopOnKey(KeyedStrands<int>* strands, AsyncQueue<int>* queue, bool* backOnKey)
{
    FrameSentinel sentinel;
    co_await strands->ResumeOn(7);
    std::optional<int> value = co_await queue->Pop(); // its target holds key 7's strand
    *backOnKey = value == 1 && strands->RunningHere(7);
}
} // namespace

TEST_CASE("A strand still referenced by a parked coroutine is not reused; work comes back to "
          "its key",
          "[strands][keyed]")
{
    ManualExecutor base;
    ManualExecutor fallback;
    AsyncQueue<int> queue(fallback);
    KeyedStrands<int> strands(base);
    bool backOnKey = false;
    PopOnKey(&strands, &queue, &backOnKey);
    base.RunAll(); // key 7 runs the coroutine, which parks; the strand retires
    REQUIRE(queue.HasWaiter());
    CHECK(strands.ActiveKeys() == 0);
    CHECK(strands.KeptStrands() == 1);
    // A new key needs a strand: the kept one is still referenced, so a fresh one is made.
    strands.Post(8, [] {});
    CHECK(strands.StrandsMade() == 2);
    base.RunAll();
    // The push hands the consumer to the retired strand, which routes it to key 7's strand.
    queue.Push(1);
    base.RunAll();
    CHECK(backOnKey);
    CHECK(fallback.Submitted() == 0);
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(strands.ActiveKeys() == 0);
}

TEST_CASE("Destroying KeyedStrands from inside a key's task is deferred", "[strands][keyed]")
{
    ManualExecutor base;
    auto* strands = new KeyedStrands<int>(base);
    int after = 0;
    strands->Post(1, [&] { delete strands; });
    strands->Post(1, [&] { ++after; });
    strands->Post(2, [&] { ++after; });
    base.RunAll();
    CHECK(after <= 1); // key 2 may have run first; key 1's queued task is dropped
    CHECK(base.Pending() == 0);
}

namespace
{
// One thread that runs what it is given, in order, never inline; it says when it has taken
// something to run.
class WorkerExecutor final : public IExecutor
{
public:
    WorkerExecutor() : thread_([this] { Loop(); }) {}
    ~WorkerExecutor()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    WorkerExecutor(const WorkerExecutor&) = delete;
    WorkerExecutor& operator=(const WorkerExecutor&) = delete;
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { Submit(ParkedWork{handle, {}}); }
    void Submit(ParkedWork work) override
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.push_back(work);
        }
        cv_.notify_all();
    }
    std::atomic<int> taken{0};

private:
    void Loop()
    {
        for (;;)
        {
            ParkedWork work;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
                if (queue_.empty())
                    return;
                work = queue_.front();
                queue_.pop_front();
            }
            taken.fetch_add(1);
            ExecutorScope scope(this);
            work.handle.resume();
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<ParkedWork> queue_;
    bool stop_ = false;
    std::thread thread_; // last: it reads the members above
};

// Set by a throwing copy on its thread: the next hash there (user code the registry runs under
// its lock) waits until the worker has taken the strand's pump, then lets it reach its dry turn.
thread_local bool tGateNextHash = false;
std::atomic<WorkerExecutor*> gGateWorker{nullptr};

struct GatedHash
{
    std::size_t operator()(int key) const noexcept
    {
        if (std::exchange(tGateNextHash, false))
            if (WorkerExecutor* worker = gGateWorker.load())
            {
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                while (worker->taken.load() == 0 && std::chrono::steady_clock::now() < deadline)
                    std::this_thread::yield();
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        return std::hash<int>{}(key);
    }
};

// A callable whose copy into the queue throws, after the registry handed the pump to the base.
struct ThrowsOnCopy
{
    bool gate = false;
    ThrowsOnCopy() = default;
    ThrowsOnCopy(const ThrowsOnCopy& other) : gate(other.gate)
    {
        if (gate)
            tGateNextHash = true;
        throw std::runtime_error("copy failed");
    }
    ThrowsOnCopy& operator=(const ThrowsOnCopy&) = delete;
    void operator()() const {}
};
} // namespace

TEST_CASE("A callable whose copy throws for a new key propagates; the key's strand retires once",
          "[strands][keyed]")
{
    // The failure this guards against: the registry detached the new strand in Post's catch while its pump was
    // already on the base: after Seal() it closed it under the registry's lock, waiting for the
    // pump, which waited for that lock at its dry turn (a deadlock); unsealed, it kept the strand
    // and the pump kept it again (one strand twice in the reuse list).
    SECTION("after Seal(), with the pump on another thread")
    {
        WorkerExecutor worker;
        gGateWorker = &worker;
        int ran = 0;
        {
            KeyedStrands<int, GatedHash> strands(worker);
            strands.Seal();
            ThrowsOnCopy fn;
            fn.gate = true;
            {
                TCTest::Watchdog watchdog("Post whose copy threw after Seal never returned");
                CHECK_THROWS_WITH(strands.Post(1, fn), "copy failed");
                tGateNextHash = false; // the fixed registry hashes nothing after the throw
                strands.WaitIdle();    // the pump's dry turn retires the key
            }
            CHECK(strands.ActiveKeys() == 0);
            CHECK(strands.KeptStrands() == 0); // made after the seal: not kept
            CHECK(strands.StrandsMade() == 1);
            strands.Post(1, [&ran] { ++ran; }); // the key works afresh
            TCTest::Watchdog watchdog("the key's next post never ran");
            strands.WaitIdle();
        }
        gGateWorker = nullptr;
        CHECK(ran == 1);
    }
    SECTION("unsealed: the strand is kept once, and reused")
    {
        ManualExecutor base;
        KeyedStrands<int> strands(base);
        ThrowsOnCopy fn;
        CHECK_THROWS_WITH(strands.Post(1, fn), "copy failed");
        base.RunAll();
        CHECK(strands.ActiveKeys() == 0);
        CHECK(strands.StrandsMade() == 1);
        CHECK(strands.KeptStrands() == 1);
        int ran = 0;
        for (int key = 2; key < 6; ++key)
        {
            strands.Post(key, [&ran] { ++ran; });
            base.RunAll();
        }
        CHECK(ran == 4);
        CHECK(strands.StrandsMade() == 1);
        CHECK(strands.KeptStrands() == 1);
    }
}

TEST_CASE("A keyed strand left dry with no pump retires: a refused replacement, a dropped pump",
          "[strands][keyed]")
{
    // The failure this guards against: a keyed strand whose replacement pump (after a task threw) was refused by
    // the base, or whose pump the base dropped, stayed active with nothing queued: Idle() false
    // and WaitIdle() hanging for ever.
    ManualExecutor base;
    KeyedStrands<int> strands(base);
    int ran = 0;
    SECTION("a refused replacement, with a call queued behind the throw (dropped)")
    {
        strands.Post(1,
                     [&base]
                     {
                         base.SetRefuse(true);
                         throw std::runtime_error("task failed");
                     });
        strands.Post(1, [&ran] { ++ran; });
        CHECK_THROWS_WITH(base.RunOne(), "task failed");
    }
    SECTION("a throw with nothing queued behind it")
    {
        strands.Post(1,
                     [&base]
                     {
                         base.SetRefuse(true);
                         throw std::runtime_error("task failed");
                     });
        CHECK_THROWS_WITH(base.RunOne(), "task failed");
    }
    SECTION("the base drops the pump it had queued")
    {
        strands.Post(1, [&ran] { ++ran; });
        base.DropAll();
    }
    base.SetRefuse(false);
    CHECK(base.Pending() == 0);
    CHECK(ran == 0);
    CHECK(strands.ActiveKeys() == 0);
    CHECK(strands.Idle());
    CHECK(strands.KeptStrands() == 1);
    {
        TCTest::Watchdog watchdog("KeyedStrands::WaitIdle after a stranded key never returned");
        strands.WaitIdle();
    }
    strands.Post(1, [&ran] { ++ran; }); // the key works afresh
    base.RunAll();
    CHECK(ran == 1);
    CHECK(strands.ActiveKeys() == 0);
}

TEST_CASE("A kept strand whose pump died of a task's exception is reused for a new key at once",
          "[strands][keyed]")
{
    // The failure this guards against: the dead pump's frame held a reference to its strand until the next task
    // death on the same thread (or the thread's exit), so the kept strand looked referenced and a
    // new key was given a new strand instead.
    ManualExecutor base;
    KeyedStrands<int> strands(base);
    int ran = 0;
    strands.Post(1, [] { throw std::runtime_error("task failed"); });
    CHECK_THROWS_WITH(base.RunOne(), "task failed");
    base.RunAll(); // the replacement pump's dry turn retires the strand
    CHECK(strands.ActiveKeys() == 0);
    CHECK(strands.KeptStrands() == 1);
    CHECK(strands.StrandsMade() == 1);

    strands.Post(2, [&ran] { ++ran; });
    CHECK(strands.StrandsMade() == 1); // the kept strand, not a new one
    CHECK(strands.KeptStrands() == 0);
    base.RunAll();
    CHECK(ran == 1);
    CHECK(strands.KeptStrands() == 1);
}

TEST_CASE("KeyedStrands over a closed strand: a post throws and leaves no key active",
          "[strands][keyed]")
{
    // The failure this guards against: the key's strand handed its pump to the base under its own lock (and the
    // registry's), the closed base dropped the pump at once, and the pump's frame took the
    // strand's lock again: a deadlock.
    TCTest::ManualExecutor base;
    Strand outer(base);
    outer.Close();
    KeyedStrands<int> keyed(static_cast<IExecutor&>(outer));
    TCTest::Watchdog watchdog("a keyed post over a closed strand never returned");
    CHECK_THROWS_AS(keyed.Post(1, [] {}), std::runtime_error);
    CHECK_THROWS_AS(keyed.Post(1, [] {}), std::runtime_error);
    CHECK(keyed.ActiveKeys() == 0);
    keyed.WaitIdle();
}
