// Strand: ordering, serialisation, batches, Seal/Close windows, destruction from inside a task,
// refusals, exceptions and the around-task hook.

#include "StrandsTestSupport.h"

#include <TC/Core.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;
using TCTest::ManualExecutor;

namespace
{
DetachedTask HopOnto(Strand* strand, std::atomic<int>* onStrand, std::atomic<int>* done)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    if (strand->RunningHere())
        onStrand->fetch_add(1);
    done->fetch_add(1);
}
} // namespace

TEST_CASE("Strand runs posts in order, one at a time, on a multi-worker scheduler",
          "[strands][strand]")
{
    Scheduler scheduler(2u);
    const int perProducer = TCTest::Scaled(20000);
    constexpr int producers = 3;
    std::vector<int> lastSeen(producers, -1);
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> outOfOrder{0};
    std::atomic<int> notHere{0};
    std::atomic<int> ran{0};
    {
        Strand strand(scheduler);
        std::vector<std::thread> threads;
        for (int p = 0; p < producers; ++p)
            threads.emplace_back([&, p] {
                for (int i = 0; i < perProducer; ++i)
                    strand.Post([&, p, i] {
                        if (inside.fetch_add(1) != 0)
                            overlaps.fetch_add(1);
                        if (lastSeen[static_cast<std::size_t>(p)] != i - 1)
                            outOfOrder.fetch_add(1);
                        lastSeen[static_cast<std::size_t>(p)] = i; // no lock: the strand's
                        if (!strand.RunningHere())
                            notHere.fetch_add(1);
                        inside.fetch_sub(1);
                        ran.fetch_add(1);
                    });
            });
        for (auto& thread : threads)
            thread.join();
        strand.WaitIdle();
        CHECK(strand.Idle());
    }
    CHECK(ran.load() == producers * perProducer);
    CHECK(overlaps.load() == 0);
    CHECK(outOfOrder.load() == 0);
    CHECK(notHere.load() == 0);
}

TEST_CASE("Coroutines hop onto a strand and run there", "[strands][strand]")
{
    Scheduler scheduler(2u);
    std::atomic<int> onStrand{0};
    std::atomic<int> done{0};
    const int count = TCTest::Scaled(2000);
    {
        Strand strand(scheduler);
        for (int i = 0; i < count; ++i)
            HopOnto(&strand, &onStrand, &done);
        while (done.load() != count)
            std::this_thread::yield();
        strand.WaitIdle();
    }
    CHECK(onStrand.load() == count);
    CHECK(FrameSentinel::live.load() == 0);
}

TEST_CASE("A turn runs at most `batch` tasks, then queues the pump again", "[strands][strand]")
{
    ManualExecutor base;
    StrandOptions options;
    options.batch = 2;
    Strand strand(base, std::move(options));
    int ran = 0;
    for (int i = 0; i < 5; ++i)
        strand.Post([&] { ++ran; });
    CHECK(base.Pending() == 1); // one hand-off serves every post made while busy
    base.RunOne();
    CHECK(ran == 2);
    CHECK(base.Pending() == 1);
    base.RunOne();
    CHECK(ran == 4);
    base.RunOne();
    CHECK(ran == 5);
    CHECK(base.Pending() == 0);
    CHECK(strand.Idle());
    strand.Post([&] { ++ran; });
    CHECK(base.Pending() == 1);
    base.RunAll();
    CHECK(ran == 6);
}

TEST_CASE("Seal refuses offers but admits returns; Close drops the rest", "[strands][strand]")
{
    ManualExecutor base;
    auto strand = std::make_unique<Strand>(base);
    int ran = 0;
    CHECK(strand->TryPost([&] { ++ran; }));
    strand->Seal();
    int ranByCaller = 0;
    auto offered = [&] { ++ranByCaller; };
    CHECK_FALSE(strand->TryPost(offered));
    offered(); // handed back untouched: the caller runs it
    CHECK(ranByCaller == 1);
    strand->Post([&] { ++ran; }); // the return door stays open until Close

    // A coroutine parked off the strand when the seal lands still comes back.
    int finished = 0;
    auto parked = [](Strand* s, ManualExecutor* other, int* fin) -> DetachedTask {
        FrameSentinel sentinel;
        co_await ResumeOn{*other};
        co_await ResumeOn{*s};
        ++*fin;
    };
    ManualExecutor elsewhere;
    parked(strand.get(), &elsewhere, &finished);
    elsewhere.RunAll(); // submits back to the sealed strand: admitted
    base.RunAll();
    CHECK(ran == 2);
    CHECK(finished == 1);
    CHECK(strand->Idle());

    // Close drops what is queued: a detached chain is freed, a call destroyed unrun.
    strand->Post([&] { ++ran; });
    parked(strand.get(), &elsewhere, &finished);
    elsewhere.RunAll();
    CHECK(FrameSentinel::live.load() == 1);
    strand->Close();
    CHECK(FrameSentinel::live.load() == 0);
    strand->Post([&] { ++ran; });
    CHECK_FALSE(strand->TryPost([&] { ++ran; }));
    CHECK_FALSE(strand->TrySubmit(std::noop_coroutine()));
    base.RunAll();
    CHECK(ran == 2);
    strand.reset();
    base.RunAll();
}

TEST_CASE("Destroying a strand from inside its own task is deferred, never a deadlock",
          "[strands][strand]")
{
    SECTION("hand-driven")
    {
        ManualExecutor base;
        auto* strand = new Strand(base);
        int after = 0;
        strand->Post([&] { delete strand; });
        strand->Post([&] { ++after; }); // queued behind: dropped
        base.RunAll();
        CHECK(after == 0);
        CHECK(base.Pending() == 0);
    }
    SECTION("on a worker thread")
    {
        Scheduler scheduler(2u);
        std::atomic<bool> destroyed{false};
        std::atomic<bool> wasHere{false};
        auto* strand = new Strand(scheduler);
        strand->Post([&] {
            wasHere = strand->RunningHere();
            delete strand;
            destroyed = true;
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!destroyed.load() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        CHECK(destroyed.load());
        CHECK(wasHere.load());
    }
}

TEST_CASE("Close waits for a task running on another thread", "[strands][strand]")
{
    Scheduler scheduler(1u);
    std::atomic<bool> started{false};
    std::atomic<bool> finished{false};
    {
        Strand strand(scheduler);
        strand.Post([&] {
            started = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            finished = true;
        });
        while (!started.load())
            std::this_thread::yield();
    } // ~Strand
    CHECK(finished.load());
}

TEST_CASE("A refused base submit hands the work back and the strand starts afresh",
          "[strands][strand]")
{
    ManualExecutor base;
    Strand strand(base);
    base.SetRefuse(true);
    int ran = 0;
    CHECK_THROWS_AS(strand.Post([&] { ++ran; }), std::runtime_error);
    // The coroutine form leaves its work with the caller: nothing is freed.
    int finished = 0;
    auto parks = [](Strand* s, int* fin) -> Task<void> {
        FrameSentinel sentinel;
        co_await ResumeOn{*s};
        ++*fin;
    };
    {
        Task<void> task = parks(&strand, &finished);
        task.GetHandle().resume(); // ResumeOn throws into the coroutine: it finishes with it
        CHECK(task.Done());
        CHECK_THROWS_AS(task.Result(), std::runtime_error);
    }
    CHECK(FrameSentinel::live.load() == 0);
    base.SetRefuse(false);
    strand.Post([&] { ++ran; });
    base.RunAll();
    CHECK(ran == 1);
    CHECK(strand.Idle());
}

namespace
{
// A move-only callable whose state shows whether it was moved from.
struct MoveOnlyCall
{
    std::unique_ptr<int> value;
    int* ran;
    void operator()() { *ran += *value; }
};
} // namespace

TEST_CASE("A refused base submit leaves the posted callable with the submitter",
          "[strands][strand]")
{
    ManualExecutor base;
    Strand strand(base);
    int ran = 0;
    MoveOnlyCall call{std::make_unique<int>(7), &ran};
    base.SetRefuse(true);
    CHECK_THROWS_AS(strand.Post(std::move(call)), std::runtime_error);
    REQUIRE(call.value); // its own work back: never moved from
    CHECK_THROWS_AS(strand.TryPost(std::move(call)), std::runtime_error);
    REQUIRE(call.value);
    // A callable held inline in its entry is given back the same way (copied bytes, unchanged).
    int inlineRan = 0;
    auto small = [&inlineRan] { ++inlineRan; };
    CHECK_THROWS_AS(strand.Post(small), std::runtime_error);
    CHECK(base.Pending() == 0);
    CHECK(strand.Idle());
    base.SetRefuse(false);
    CHECK(strand.TryPost(std::move(call)));
    CHECK_FALSE(call.value);
    strand.Post(small);
    base.RunAll();
    CHECK(ran == 7);
    CHECK(inlineRan == 1);
    // A closed strand refuses a TryPost without touching the callable either.
    MoveOnlyCall late{std::make_unique<int>(1), &ran};
    strand.Close();
    CHECK_FALSE(strand.TryPost(std::move(late)));
    CHECK(late.value);
}

TEST_CASE("A refused base submit leaves a keyed post's callable with the submitter",
          "[strands][keyed]")
{
    ManualExecutor base;
    KeyedStrands<int> strands(base);
    int ran = 0;
    MoveOnlyCall call{std::make_unique<int>(5), &ran};
    base.SetRefuse(true);
    CHECK_THROWS_AS(strands.Post(1, std::move(call)), std::runtime_error);
    REQUIRE(call.value);
    CHECK_THROWS_AS(strands.TryPost(1, std::move(call)), std::runtime_error);
    REQUIRE(call.value);
    base.SetRefuse(false);
    CHECK(strands.TryPost(1, std::move(call)));
    base.RunAll();
    CHECK(ran == 5);
    CHECK(strands.Idle());
}

TEST_CASE("A task that throws mid-chunk leaves the rest of the chunk queued in order",
          "[strands][strand]")
{
    // A chunk never reaches past its queue segment: with a first segment of 4 the chunk is
    // 1, throw, 2, 3 and 4 and 5 wait in the next segment; with 3 the put-back is one entry.
    for (std::size_t initialCapacity : {16u, 4u, 3u, 2u})
    {
        INFO("initialCapacity " << initialCapacity);
        ManualExecutor base;
        StrandOptions options;
        options.initialCapacity = initialCapacity;
        Strand strand(base, options);
        std::vector<int> order;
        strand.Post([&order] { order.push_back(1); });
        strand.Post([] { throw std::runtime_error("task failed"); });
        for (int i = 2; i < 6; ++i)
            strand.Post([&order, i] { order.push_back(i); });
        CHECK_THROWS_WITH(base.RunOne(), "task failed");
        strand.Post([&order] { order.push_back(6); });
        base.RunAll();
        CHECK(order == std::vector<int>{1, 2, 3, 4, 5, 6});
        CHECK(strand.Idle());
    }
}

TEST_CASE("An initialCapacity past what memory can hold fails the first post and queues nothing",
          "[strands][strand]")
{
    // 2^61 entries of 56 bytes plus the segment's header wrap round to 16 bytes if multiplied
    // unchecked; the largest value made a doubling ring's growth loop for ever.
    for (std::size_t capacity : {std::size_t{1} << 61, ~std::size_t{0}})
    {
        INFO("initialCapacity " << capacity);
        ManualExecutor base;
        StrandOptions options;
        options.initialCapacity = capacity;
        Strand strand(base, options);
        int ran = 0;
        CHECK_THROWS_AS(strand.Post([&ran] { ++ran; }), std::bad_alloc);
        CHECK(strand.Idle());
        CHECK(base.Pending() == 0);
        CHECK(ran == 0);
    }
}

TEST_CASE("What a task throws propagates to whoever resumed the pump", "[strands][strand]")
{
    ManualExecutor base;
    Strand strand(base);
    int ran = 0;
    strand.Post([] { throw std::runtime_error("task failed"); });
    strand.Post([&] { ++ran; });
    CHECK_THROWS_WITH(base.RunOne(), "task failed");
    // A replacement pump took over the queue.
    base.RunAll();
    CHECK(ran == 1);
    strand.Post([] { throw std::runtime_error("again"); });
    CHECK_THROWS_WITH(base.RunOne(), "again"); // frees the first dead pump
    strand.Post([&] { ++ran; });
    base.RunAll();
    CHECK(ran == 2);
}

TEST_CASE("The around-task hook is told each task's kind", "[strands][strand]")
{
    ManualExecutor base;
    std::vector<TaskKind> kinds;
    StrandOptions options;
    options.aroundTask = [&](RunTask& task) {
        kinds.push_back(task.Kind());
        task();
    };
    Strand strand(base, std::move(options));
    std::atomic<int> onStrand{0};
    std::atomic<int> done{0};
    strand.Post([] {});
    HopOnto(&strand, &onStrand, &done);
    base.RunAll();
    REQUIRE(kinds.size() == 2);
    CHECK(kinds[0] == TaskKind::Call);
    CHECK(kinds[1] == TaskKind::Resumption);
    CHECK(onStrand.load() == 1);
}

TEST_CASE("Posts after Close from inside the strand's own task never run", "[strands][strand]")
{
    // The queue is empty and keeps its segment, and the pump is still running: the inline way
    // of a post (Strand::Post's fast path) is open in principle, and must refuse there as the
    // full way does.
    TCTest::ManualExecutor base;
    TC::Strands::Strand strand(base);
    int offered = -1;
    bool laterRan = false;
    strand.Post(
        [&]
        {
            strand.Close();
            offered = strand.TryPost([&laterRan] { laterRan = true; }) ? 1 : 0;
            strand.Post([&laterRan] { laterRan = true; }); // dropped: closed
        });
    base.RunAll();
    CHECK(offered == 0);
    CHECK_FALSE(laterRan);
    CHECK(strand.Idle());
}

TEST_CASE("WaitIdle from the strand's own task is refused", "[strands][strand]")
{
    ManualExecutor base;
    Strand strand(base);
    bool refused = false;
    strand.Post([&] {
        try
        {
            strand.WaitIdle();
        }
        catch (const std::logic_error&)
        {
            refused = true;
        }
    });
    base.RunAll();
    CHECK(refused);
    CHECK_FALSE(strand.RunningHere());
}

TEST_CASE("An offer racing the seal is either run or handed back, never lost",
          "[strands][strand]")
{
    Scheduler scheduler(2u);
    const int offers = TCTest::Scaled(20000);
    std::atomic<int> ran{0};
    int accepted = 0;
    int handedBack = 0;
    {
        Strand strand(scheduler);
        std::thread sealer([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            strand.Seal();
        });
        // Offers go on until the seal has been seen refusing a few (every offer after it is).
        for (int i = 0; i < offers || handedBack < 100; ++i)
        {
            auto work = [&ran] { ran.fetch_add(1); };
            if (strand.TryPost(work))
                ++accepted;
            else
                ++handedBack;
        }
        sealer.join();
        strand.WaitIdle(); // seal, drain, then close (the destructor)
    }
    CHECK(accepted + handedBack >= offers);
    CHECK(ran.load() == accepted);
    CHECK(handedBack >= 100);
}

namespace
{
// A callable that must never run: when the queued copy is dropped unrun, its destructor calls
// `onDrop` (a moved-from copy does nothing).
template <class OnDrop>
struct RunsWhenDropped
{
    OnDrop onDrop;
    bool armed = true;
    explicit RunsWhenDropped(OnDrop action) : onDrop(std::move(action)) {}
    RunsWhenDropped(RunsWhenDropped&& other) noexcept
        : onDrop(std::move(other.onDrop)), armed(std::exchange(other.armed, false))
    {
    }
    void operator()() { FAIL("a dropped callable ran"); }
    ~RunsWhenDropped()
    {
        if (armed)
            onDrop();
    }
};

// Dropped unrun, has another thread post `late` to the strand: a post that arrives while a
// refused pump drops its queue (the strand's lock is free then).
auto PostsWhenDropped(TC::Strands::Strand* strand, std::atomic<bool>* lateRan)
{
    return RunsWhenDropped(
        [strand, lateRan] {
            std::thread([strand, lateRan] { strand->Post([lateRan] { *lateRan = true; }); }).join();
        });
}
} // namespace

namespace
{
// With the strand's batch at 1: runs the pump's turn (the first task) while the base refuses
// every submit, so the pump's re-submit is refused and it drops what is queued; then runs what
// the base holds after that with refusals off.
void RunFirstRefusingItsResubmit(TCTest::ManualExecutor& base)
{
    base.SetRefuse(true);
    base.RunOne();
    base.SetRefuse(false);
    base.RunAll();
}
} // namespace

TEST_CASE("A refused re-submit drops the queue, yet runs what is posted meanwhile; a keyed strand "
          "retires",
          "[strands][strand]")
{
    // The failure this guards against: a post that arrived while the pump dropped the queue its base had refused
    // was left queued behind an Idle pump (never run, Idle() false, WaitIdle() hanging), and a
    // keyed strand stayed active in its registry with nothing queued.
    SECTION("a plain strand")
    {
        TCTest::ManualExecutor base;
        std::atomic<bool> lateRan{false};
        TC::Strands::StrandOptions options;
        options.batch = 1;
        TC::Strands::Strand strand(base, options);
        int first = 0;
        strand.Post([&first] { ++first; });
        strand.Post(PostsWhenDropped(&strand, &lateRan));
        RunFirstRefusingItsResubmit(base); // the second is dropped
        CHECK(first == 1);
        CHECK(lateRan);
        CHECK(strand.Idle());
    }
    SECTION("a keyed strand")
    {
        TCTest::ManualExecutor base;
        TC::Strands::KeyedStrandsOptions<int> options;
        options.batch = 1;
        TC::Strands::KeyedStrands<int> strands(base, options);
        int ran = 0;
        strands.Post(1, [&ran] { ++ran; });
        strands.Post(1, [&ran] { ++ran; });
        RunFirstRefusingItsResubmit(base); // the second is dropped
        CHECK(ran == 1);
        CHECK(strands.Idle());
        CHECK(strands.ActiveKeys() == 0);
    }
}

namespace
{
// Dropped unrun, offers another call to the strand from its destructor, on the thread that
// drops it, and records the answer: 1 queued, 0 refused.
auto OffersHereWhenDropped(TC::Strands::Strand* strand, std::atomic<int>* answer)
{
    return RunsWhenDropped([strand, answer] { *answer = strand->TryPost([] {}) ? 1 : 0; });
}
} // namespace

TEST_CASE("An offer from a dropped call's destructor on the dropping thread is refused, even "
          "with the pump running and room queued",
          "[strands][strand]")
{
    // The other thread's post (from the first dropped call) is admitted and gives the queue a
    // segment with room again while the pump still counts as running: an offer that took the
    // inline way there (Strand::Post's fast path) without asking whether this thread is the
    // one dropping would be queued.
    TCTest::ManualExecutor base;
    std::atomic<bool> otherThreadRan{false};
    std::atomic<int> answer{-1};
    TC::Strands::StrandOptions options;
    options.batch = 1;
    TC::Strands::Strand strand(base, options);
    int first = 0;
    strand.Post([&first] { ++first; });
    strand.Post(PostsWhenDropped(&strand, &otherThreadRan));
    strand.Post(OffersHereWhenDropped(&strand, &answer));
    RunFirstRefusingItsResubmit(base); // the other two are dropped
    CHECK(first == 1);
    CHECK(otherThreadRan);
    CHECK(answer == 0);
    CHECK(strand.Idle());
}

namespace
{
// The morph pattern: a queued call holds the last reference to the object that owns the strand.
struct StrandOwner
{
    std::unique_ptr<Strand> strand;
    bool* destroyed;
    ~StrandOwner() { *destroyed = true; }
};

struct HoldsStrandOwner
{
    std::shared_ptr<StrandOwner> owner;
    void operator()() const {}
};

// Counts its destruction: shows a dropped entry was freed, not lost.
struct CountsDrop
{
    std::shared_ptr<int> drops; // null once moved from, so only the queued copy counts
    explicit CountsDrop(std::shared_ptr<int> counter) : drops(std::move(counter)) {}
    CountsDrop(CountsDrop&& other) noexcept = default;
    CountsDrop& operator=(CountsDrop&&) = delete;
    ~CountsDrop()
    {
        if (drops)
            ++*drops;
    }
    void operator()() const {}
};
} // namespace

TEST_CASE("A dropped call that destroys its strand during a refused hand-off is deferred, never "
          "a deadlock",
          "[strands][strand]")
{
    // The failure this guards against: ~Strand inside the drop waited in Close() for the hand-off its own thread
    // held (handOffs_), and never returned.
    ManualExecutor base;
    bool ownerDestroyed = false;
    auto drops = std::make_shared<int>(0);
    int ran = 0;
    StrandOptions options;
    options.batch = 1;
    auto owner = std::make_shared<StrandOwner>();
    owner->destroyed = &ownerDestroyed;
    owner->strand = std::make_unique<Strand>(base, options);
    Strand& strand = *owner->strand;
    SECTION("the re-submit after a spent batch is refused")
    {
        strand.Post([&ran] { ++ran; });
        strand.Post(HoldsStrandOwner{owner});
        strand.Post(CountsDrop{drops}); // behind the owner's holder: still freed
        owner.reset();
        base.SetRefuse(true);
        TCTest::Watchdog watchdog("~Strand inside a refused re-submit's drop never returned");
        base.RunOne(); // runs the first; the re-submit is refused; the rest is dropped
    }
    SECTION("the replacement pump after a task threw is refused")
    {
        strand.Post(
            [&base]
            {
                base.SetRefuse(true); // the replacement pump's submit is refused
                throw std::runtime_error("task failed");
            });
        strand.Post(HoldsStrandOwner{owner});
        strand.Post(CountsDrop{drops});
        owner.reset();
        TCTest::Watchdog watchdog("~Strand inside a refused replacement's drop never returned");
        CHECK_THROWS_WITH(base.RunOne(), "task failed");
    }
    CHECK(ownerDestroyed);
    CHECK(*drops == 1);
    CHECK(base.Pending() == 0);
    base.SetRefuse(false);
    CHECK(base.RunAll() == 0);
    CHECK(ran <= 1);
}

TEST_CASE("A strand over a closed strand: a post throws, nothing deadlocks or is lost",
          "[strands][strand]")
{
    // The failure this guards against: the inner strand handed its pump to the base under its own lock, the
    // closed outer strand dropped the pump at once, and the pump's frame took that lock again.
    ManualExecutor base;
    Strand outer(base);
    outer.Close();
    Strand inner(static_cast<IExecutor&>(outer));
    auto drops = std::make_shared<int>(0);
    TCTest::Watchdog watchdog("a post to a strand over a closed strand never returned");
    CountsDrop first{drops};
    CHECK_THROWS_AS(inner.Post(std::move(first)), std::runtime_error);
    CHECK(*drops == 0); // not taken: the caller still holds it
    CHECK(first.drops != nullptr);
    CHECK_THROWS_AS(inner.Post([] {}), std::runtime_error); // every post, not only the first
    CHECK(inner.Idle());
    CHECK(base.RunAll() == 0);
}

TEST_CASE("A pump dropped by its base during a hand-off may destroy its strand from the drop",
          "[strands][strand]")
{
    // The failure this guards against: a base that dropped the pump at once (a closed strand) freed the queue
    // inside the hand-off, and a dropped call that destroyed the strand waited in Close() for
    // that hand-off, which only its own thread could end.
    ManualExecutor base;
    Strand outer(base);
    bool ownerDestroyed = false;
    auto drops = std::make_shared<int>(0);
    StrandOptions options;
    options.batch = 1;
    auto owner = std::make_shared<StrandOwner>();
    owner->destroyed = &ownerDestroyed;
    owner->strand = std::make_unique<Strand>(static_cast<IExecutor&>(outer), options);
    Strand& inner = *owner->strand;
    inner.Post([&outer] { outer.Close(); }); // the base closes while the inner turn runs
    inner.Post(HoldsStrandOwner{owner});     // queued behind: holds the owner's last reference
    inner.Post(CountsDrop{drops});
    owner.reset();
    TCTest::Watchdog watchdog("~Strand inside a dropped hand-off never returned");
    base.RunAll();
    CHECK(ownerDestroyed);
    CHECK(*drops == 1);
    CHECK(base.Pending() == 0);
}

TEST_CASE("Close drops each queued call exactly once when the queue spans two segments",
          "[strands][strand]")
{
    // A callable too big for an entry, counting its destructions by id.
    static int destroyed[8];
    struct Tracked
    {
        int id;
        std::array<char, 200> padding{};
        explicit Tracked(int i) noexcept : id(i) {}
        Tracked(Tracked&& other) noexcept : id(std::exchange(other.id, -1)) {}
        Tracked(const Tracked&) = delete;
        ~Tracked()
        {
            if (id >= 0)
                ++destroyed[id];
        }
        void operator()() const noexcept {}
    };
    std::fill(std::begin(destroyed), std::end(destroyed), 0);
    TCTest::ManualExecutor base;
    StrandOptions options;
    options.initialCapacity = 4;
    options.batch = 2;
    Strand strand(base, options);
    for (int i = 0; i < 4; ++i)
        strand.Post(Tracked(i)); // the first segment is full: slots 0-3
    REQUIRE(base.RunOne());      // the pump runs 0 and 1 (its batch) and queues itself again
    for (int i = 4; i < 6; ++i)
        strand.Post(Tracked(i)); // a second segment: the queue is 2, 3 | 4, 5
    strand.Close();              // drops 2-5
    base.RunAll();
    for (int i = 0; i < 6; ++i)
    {
        INFO("call " << i);
        CHECK(destroyed[i] == 1);
    }
}
