// WhenAll and WhenAny under abandonment: a child whose resumption its executor drops (a closed
// strand) must not free siblings still parked elsewhere; the chain is freed from its root once
// the last child has finished or been abandoned too, and the awaiting coroutine never resumes.

#include "StrandsTestSupport.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;
using TCTest::ManualExecutor;

namespace
{
struct Seen
{
    std::atomic<int> popped{0};    // children that took an item
    std::atomic<int> cancelled{0}; // children that unwound on OperationCancelled
    std::atomic<int> after{0};     // roots that ran past their join: must stay 0 here
};

Task<void> PopOne(AsyncQueue<int>* queue, Seen* seen)
{
    FrameSentinel sentinel;
    try
    {
        if (co_await queue->Pop())
            seen->popped.fetch_add(1);
    }
    catch (const OperationCancelled&)
    {
        seen->cancelled.fetch_add(1);
        throw;
    }
}

// Leaves the strand for `base` first, so its Pop parks with a target that is still running.
Task<void> PopOnBase(IExecutor* base, AsyncQueue<int>* queue, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*base};
    co_await PopOne(queue, seen);
}

// Parks in `lot`'s queue: a park no stop request reaches.
Task<void> ParkIn(IExecutor* lot, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*lot};
    seen->popped.fetch_add(1);
}

DetachedTask AllOnStrand(Strand* strand, Task<void> first, Task<void> second, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    co_await WhenAll(std::move(first), std::move(second));
    seen->after.fetch_add(1);
}

DetachedTask AnyOnStrand(Strand* strand, Task<void> first, Task<void> second, Seen* seen)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*strand};
    (void)co_await WhenAny(std::move(first), std::move(second));
    seen->after.fetch_add(1);
}

DetachedTask AllHere(Task<void> first, Task<void> second, Seen* seen)
{
    FrameSentinel sentinel;
    co_await WhenAll(std::move(first), std::move(second));
    seen->after.fetch_add(1);
}

Task<void> InnerAll(Task<void> first, Task<void> second, Seen* seen)
{
    FrameSentinel sentinel;
    co_await WhenAll(std::move(first), std::move(second));
    seen->after.fetch_add(1);
}

Task<void> InnerAny(Task<void> first, Task<void> second, Seen* seen)
{
    FrameSentinel sentinel;
    (void)co_await WhenAny(std::move(first), std::move(second));
    seen->after.fetch_add(1);
}

template <class Predicate>
bool WaitUntil(Predicate done)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    return done();
}
} // namespace

TEST_CASE("WhenAll: a child dropped by a closed strand leaves a sibling parked on a queue alive; "
          "the chain is freed once the sibling finishes",
          "[strands][whenall]")
{
    ManualExecutor base;
    Seen seen;
    AsyncQueue<int> q1(base);
    AsyncQueue<int> q2(base);
    auto strand = std::make_unique<Strand>(base);
    AllOnStrand(strand.get(), PopOne(&q1, &seen), PopOnBase(&base, &q2, &seen), &seen);
    base.RunAll();
    REQUIRE(q1.HasWaiter());
    REQUIRE(q2.HasWaiter());
    CHECK(FrameSentinel::live.load() == 4); // root, child 1, child 2 and the task it awaits
    strand.reset();
    q1.Push(1); // child 1 comes back to the closed strand, which drops it
    REQUIRE(FrameSentinel::live.load() == 3); // child 1 freed; root and child 2 kept
    REQUIRE(q2.HasWaiter());
    q2.Push(2); // child 2 resumes on the base and finishes: the last, it frees the chain
    base.RunAll();
    CHECK(seen.popped.load() == 1);
    CHECK(seen.after.load() == 0); // the root never resumes past an abandoned join
    CHECK(FrameSentinel::live.load() == 0);
    CHECK_FALSE(q2.HasWaiter());
}

TEST_CASE("WhenAll: both children dropped by a closed strand one after the other free the "
          "chain once",
          "[strands][whenall]")
{
    ManualExecutor base;
    Seen seen;
    AsyncQueue<int> q1(base);
    AsyncQueue<int> q2(base);
    auto strand = std::make_unique<Strand>(base);
    AllOnStrand(strand.get(), PopOne(&q1, &seen), PopOne(&q2, &seen), &seen);
    base.RunAll();
    REQUIRE(q1.HasWaiter());
    REQUIRE(q2.HasWaiter());
    strand.reset();
    q1.Push(1);
    REQUIRE(FrameSentinel::live.load() == 2); // root and the sibling still parked on q2
    REQUIRE(q2.HasWaiter());
    q2.Push(2); // dropped too: the last, it frees the chain from its root
    CHECK(FrameSentinel::live.load() == 0);
    CHECK_FALSE(q2.HasWaiter());
    CHECK(seen.popped.load() == 0);
    CHECK(seen.after.load() == 0);
    CHECK(base.Pending() == 0);
}

TEST_CASE("Two children dropped together by one executor free the chain once",
          "[strands][whenall][whenany]")
{
    ManualExecutor base;
    ManualExecutor lot;
    Seen seen;
    SECTION("WhenAll, both parked in one executor that drops everything")
    {
        AllHere(ParkIn(&lot, &seen), ParkIn(&lot, &seen), &seen);
        REQUIRE(lot.Pending() == 2);
        CHECK(FrameSentinel::live.load() == 3);
        lot.DropAll(); // two abandons of one chain: the second must not destroy the root again
    }
    SECTION("WhenAny, both queued on a strand that is destroyed before it runs them")
    {
        StrandOptions options;
        options.batch = 1; // the turn that runs the root leaves the children queued
        auto strand = std::make_unique<Strand>(base, std::move(options));
        AnyOnStrand(strand.get(), ParkIn(strand.get(), &seen), ParkIn(strand.get(), &seen), &seen);
        REQUIRE(base.RunOne()); // the root joins; each child hops back onto the strand
        REQUIRE(FrameSentinel::live.load() == 3);
        REQUIRE(base.Pending() == 1); // the pump, queued again with both children behind it
        strand.reset();               // drops both queued resumptions
        base.RunAll();                // the pump finds the strand closed and ends
    }
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(seen.popped.load() == 0);
    CHECK(seen.after.load() == 0);
}

TEST_CASE("WhenAny: a child dropped by a closed strand stops a sibling parked on a queue, which "
          "unwinds, then the chain is freed",
          "[strands][whenany]")
{
    ManualExecutor base;
    Seen seen;
    AsyncQueue<int> q1(base);
    AsyncQueue<int> q2(base);
    auto strand = std::make_unique<Strand>(base);
    AnyOnStrand(strand.get(), PopOne(&q1, &seen), PopOnBase(&base, &q2, &seen), &seen);
    base.RunAll();
    REQUIRE(q1.HasWaiter());
    REQUIRE(q2.HasWaiter());
    strand.reset();
    q1.Push(1); // child 1 dropped; the race is settled, so child 2 is stopped
    REQUIRE(FrameSentinel::live.load() == 3);
    CHECK_FALSE(q2.HasWaiter()); // taken off the queue by the stop, handed to the base
    base.RunAll();               // child 2 unwinds cancelled: the last, it frees the chain
    CHECK(seen.cancelled.load() == 1);
    CHECK(FrameSentinel::live.load() == 0);
    q2.Push(2); // nobody waits any more
    CHECK(seen.popped.load() == 0);
    CHECK(seen.after.load() == 0);
}

TEST_CASE("WhenAny: a sibling that completes after another child was dropped frees the chain "
          "and the root does not resume",
          "[strands][whenany]")
{
    ManualExecutor base;
    ManualExecutor lot;
    Seen seen;
    AsyncQueue<int> q1(base);
    auto strand = std::make_unique<Strand>(base);
    AnyOnStrand(strand.get(), PopOne(&q1, &seen), ParkIn(&lot, &seen), &seen);
    base.RunAll();
    REQUIRE(q1.HasWaiter());
    REQUIRE(lot.Pending() == 1);
    strand.reset();
    q1.Push(1); // child 1 dropped; child 2 sits in `lot`, where no stop reaches it
    REQUIRE(FrameSentinel::live.load() == 2);
    lot.RunAll(); // child 2 completes: the last, it frees the chain instead of resuming the root
    CHECK(seen.popped.load() == 1);
    CHECK(seen.after.load() == 0);
    CHECK(FrameSentinel::live.load() == 0);
}

TEST_CASE("WhenAny: a child dropped by a closed strand and a sibling dropped later free the "
          "chain once",
          "[strands][whenany]")
{
    ManualExecutor base;
    ManualExecutor lot;
    Seen seen;
    AsyncQueue<int> q1(base);
    AsyncQueue<int> q2(base);
    auto strand = std::make_unique<Strand>(base);
    SECTION("the sibling sits in another executor, which drops it")
    {
        AnyOnStrand(strand.get(), PopOne(&q1, &seen), ParkIn(&lot, &seen), &seen);
        base.RunAll();
        REQUIRE(lot.Pending() == 1);
        strand.reset();
        q1.Push(1);
        REQUIRE(FrameSentinel::live.load() == 2);
        lot.DropAll();
    }
    SECTION("the sibling is parked on a queue and stopped back to the closed strand")
    {
        AnyOnStrand(strand.get(), PopOne(&q1, &seen), PopOne(&q2, &seen), &seen);
        base.RunAll();
        REQUIRE(q2.HasWaiter());
        strand.reset();
        q1.Push(1); // the stop hands child 2 to the closed strand, which drops it as well
        CHECK_FALSE(q2.HasWaiter());
    }
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(seen.popped.load() == 0);
    CHECK(seen.after.load() == 0);
}

TEST_CASE("Nested joins: an abandoned inner join abandons the outer child that awaits it",
          "[strands][whenall]")
{
    ManualExecutor base;
    Seen seen;
    AsyncQueue<int> q1(base);
    AsyncQueue<int> q2(base);
    AsyncQueue<int> q3(base);
    auto strand = std::make_unique<Strand>(base);
    SECTION("WhenAll inside WhenAll, every leaf dropped in turn")
    {
        AllOnStrand(strand.get(), InnerAll(PopOne(&q1, &seen), PopOne(&q2, &seen), &seen),
                    PopOne(&q3, &seen), &seen);
        base.RunAll();
        REQUIRE(FrameSentinel::live.load() == 5);
        strand.reset();
        q1.Push(1);
        REQUIRE(FrameSentinel::live.load() == 4); // root, inner, its sibling, the outer sibling
        q3.Push(3);
        REQUIRE(FrameSentinel::live.load() == 3); // the inner join still has a child out
        REQUIRE(q2.HasWaiter());
        q2.Push(2); // the inner join's last: abandons the outer child, the outer join's last
    }
    SECTION("WhenAny inside WhenAll: the stopped inner sibling unwinds on the base")
    {
        AllOnStrand(strand.get(), InnerAny(PopOne(&q1, &seen), PopOnBase(&base, &q2, &seen), &seen),
                    PopOne(&q3, &seen), &seen);
        base.RunAll();
        REQUIRE(FrameSentinel::live.load() == 6);
        strand.reset();
        q1.Push(1); // inner child 1 dropped; inner child 2 stopped and handed to the base
        REQUIRE(FrameSentinel::live.load() == 5);
        base.RunAll(); // inner child 2 unwinds: the inner join abandons the outer child
        REQUIRE(FrameSentinel::live.load() == 2); // the root and the outer sibling
        CHECK(seen.cancelled.load() == 1);
        REQUIRE(q3.HasWaiter());
        q3.Push(3);
    }
    CHECK(FrameSentinel::live.load() == 0);
    CHECK_FALSE(q1.HasWaiter());
    CHECK_FALSE(q2.HasWaiter());
    CHECK_FALSE(q3.HasWaiter());
    CHECK(seen.popped.load() == 0);
    CHECK(seen.after.load() == 0);
}

TEST_CASE("A child dropped on one thread while its sibling finishes or is dropped on another "
          "frees the chain once",
          "[strands][whenall][whenany]")
{
    Scheduler scheduler(2u);
    const int rounds = TCTest::Scaled(400);
    for (int round = 0; round < rounds; ++round)
    {
        Seen seen;
        AsyncQueue<int> q1(scheduler);
        AsyncQueue<int> q2(scheduler);
        auto strand = std::make_unique<Strand>(scheduler);
        const bool any = round % 4 >= 2;
        const bool siblingFinishes = round % 2 == 0;
        Task<void> sibling =
            siblingFinishes ? PopOnBase(&scheduler, &q2, &seen) : PopOne(&q2, &seen);
        if (any)
            AnyOnStrand(strand.get(), PopOne(&q1, &seen), std::move(sibling), &seen);
        else
            AllOnStrand(strand.get(), PopOne(&q1, &seen), std::move(sibling), &seen);
        REQUIRE(WaitUntil([&] { return q1.HasWaiter() && q2.HasWaiter(); }));
        strand->WaitIdle();
        strand.reset();
        // WhenAny: the drop's stop races the push for the sibling; either answers it.
        std::thread first([&] { q1.Push(1); });
        std::thread second([&] { q2.Push(2); });
        first.join();
        second.join();
        REQUIRE(WaitUntil([] { return FrameSentinel::live.load() == 0; }));
        if (!siblingFinishes)
            CHECK(seen.popped.load() + seen.cancelled.load() == 0);
        else if (any)
            CHECK(seen.popped.load() + seen.cancelled.load() == 1);
        else
            CHECK(seen.popped.load() == 1);
        CHECK(seen.after.load() == 0);
        CHECK_FALSE(q2.HasWaiter());
    }
}
