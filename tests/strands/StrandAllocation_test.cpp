// Fails every allocation of a first submit in turn, and counts what the steady state allocates.
// Its own executable: it replaces the global operator new.

#include "StrandsTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

#include "support/MallocDeletes.h"

namespace
{
// Only the arming thread counts and fails, so Catch2's own allocations elsewhere never do.
thread_local bool tArmed = false;
thread_local long tCount = 0;
thread_local long tFailAt = 0; // 0: never fail

void CountOrFail()
{
    if (tArmed)
    {
        ++tCount;
        if (tCount == tFailAt)
            throw std::bad_alloc();
    }
}

void* Allocate(std::size_t size)
{
    CountOrFail();
    if (void* p = std::malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}

// The over-aligned forms (a strand's queue segments) count and fail alike.
void* AllocateAligned(std::size_t size, std::align_val_t alignment)
{
    CountOrFail();
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<std::size_t>(alignment), size ? size : 1) == 0)
        return p;
    throw std::bad_alloc();
}

struct Armed
{
    explicit Armed(long failAt = 0)
    {
        tCount = 0;
        tFailAt = failAt;
        tArmed = true;
    }
    ~Armed() { tArmed = false; }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
    long Count() const { return tCount; }
};
} // namespace

void* operator new(std::size_t size)
{
    return Allocate(size);
}
void* operator new[](std::size_t size)
{
    return Allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    try
    {
        return Allocate(size);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    try
    {
        return Allocate(size);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new(std::size_t size, std::align_val_t alignment)
{
    return AllocateAligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment)
{
    return AllocateAligned(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    try
    {
        return AllocateAligned(size, alignment);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    try
    {
        return AllocateAligned(size, alignment);
    }
    catch (...)
    {
        return nullptr;
    }
}
// Every operator delete frees with std::free (support/MallocDeletes.h, included above).

using namespace TC;
using namespace TC::Strands;

namespace
{
// A base whose queue never allocates after construction.
class RingExecutor final : public IExecutor
{
public:
    RingExecutor() : ring_(64) {}
    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { Submit(ParkedWork{handle, {}}); }
    void Submit(ParkedWork work) override
    {
        if (count_ == ring_.size())
            throw std::runtime_error("RingExecutor full");
        ring_[(head_ + count_++) % ring_.size()] = work;
    }
    void RunAll()
    {
        while (count_ > 0)
        {
            ParkedWork work = ring_[head_];
            head_ = (head_ + 1) % ring_.size();
            --count_;
            ExecutorScope scope(this);
            work.handle.resume();
        }
    }

private:
    std::vector<ParkedWork> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

Task<void> HopAndRecord(Strand* strand, bool* failed, bool* ranHere)
{
    try
    {
        co_await ResumeOn{*strand};
    }
    catch (const std::bad_alloc&)
    {
        *failed = true;
        co_return;
    }
    *ranHere = strand->RunningHere();
}

Task<void> Nop()
{
    co_return;
}

// Too big to be held inline in a queue entry (detail::kInlineCall): a post of it allocates its
// call.
struct BigCall
{
    int* ran;
    void* pad[4];
    void operator()() const { ++*ran; }
};
static_assert(!detail::kInlineCall<BigCall>);

struct TaskFailed
{
};
} // namespace

TEST_CASE("A failing allocation at every step of a first post leaves the strand working",
          "[strands][allocation]")
{
    long steps = 0;
    for (long failAt = 1;; ++failAt)
    {
        TCTest::ManualExecutor base; // its submit allocates too: a refusal is one of the steps
        Strand strand(base);
        int ran = 0;
        bool threw = false;
        long made = 0;
        {
            Armed armed(failAt);
            try
            {
                strand.Post(BigCall{&ran, {}});
            }
            catch (const std::bad_alloc&)
            {
                threw = true;
            }
            made = armed.Count();
        }
        base.RunAll();
        CHECK(ran == (threw ? 0 : 1));
        strand.Post([&] { ++ran; }); // the strand starts afresh
        base.RunAll();
        CHECK(ran == (threw ? 1 : 2));
        CHECK(strand.Idle());
        if (made < failAt)
        {
            CHECK_FALSE(threw);
            steps = failAt - 1;
            break;
        }
        CHECK(threw);
    }
    CHECK(steps >= 3); // the call, the queue's room, the pump's frame (and the base's own)
}

TEST_CASE("A failing allocation at every step of a first coroutine submit leaves the strand "
          "working",
          "[strands][allocation]")
{
    for (long failAt = 1;; ++failAt)
    {
        TCTest::ManualExecutor base;
        Strand strand(base);
        bool failed = false;
        bool ranHere = false;
        Task<void> task = HopAndRecord(&strand, &failed, &ranHere);
        long made = 0;
        {
            Armed armed(failAt);
            task.GetHandle().resume();
            made = armed.Count();
        }
        base.RunAll();
        REQUIRE(task.Done());
        CHECK(failed != ranHere);
        int ran = 0;
        strand.Post([&] { ++ran; });
        base.RunAll();
        CHECK(ran == 1);
        if (made < failAt)
        {
            CHECK_FALSE(failed);
            break;
        }
        CHECK(failed);
    }
}

TEST_CASE("A post to an idle key allocates only the call; a coroutine submit nothing",
          "[strands][allocation]")
{
    RingExecutor base;
    KeyedStrands<int> strands(base);
    // Warm up: make a strand, let it retire and be kept, with its map node.
    strands.Post(1, [] {});
    base.RunAll();
    REQUIRE(strands.KeptStrands() == 1);
    REQUIRE(strands.SpareNodes() == 1);

    int ran = 0;
    long postAllocations = 0;
    {
        Armed armed;
        strands.Post(2, BigCall{&ran, {}});
        postAllocations = armed.Count();
    }
    base.RunAll();
    CHECK(ran == 1);
    CHECK(postAllocations == 1);
    // A small trivially copyable callable is held in its queue entry: nothing at all.
    {
        Armed armed;
        strands.Post(4, [&ran] { ++ran; });
        postAllocations = armed.Count();
    }
    base.RunAll();
    CHECK(ran == 2);
    CHECK(postAllocations == 0);

    Task<void> task = Nop(); // its frame is the caller's, made before
    long submitAllocations = 0;
    {
        Armed armed;
        strands.Submit(3, task.GetHandle());
        submitAllocations = armed.Count();
    }
    base.RunAll();
    CHECK(task.Done());
    CHECK(submitAllocations == 0);
    CHECK(strands.StrandsMade() == 1);
}

TEST_CASE("A strand's steady state allocates only a post's call", "[strands][allocation]")
{
    RingExecutor base;
    Strand strand(base);
    strand.Post([] {});
    base.RunAll();
    int ran = 0;
    long allocations = 0;
    {
        Armed armed;
        for (int i = 0; i < 8; ++i)
            strand.Post(BigCall{&ran, {}});
        allocations = armed.Count();
    }
    base.RunAll();
    CHECK(ran == 8);
    CHECK(allocations == 8);
    {
        Armed armed;
        for (int i = 0; i < 8; ++i)
            strand.Post([&ran] { ++ran; });
        allocations = armed.Count();
    }
    base.RunAll();
    CHECK(ran == 16);
    CHECK(allocations == 0);
    Task<void> task = Nop();
    {
        Armed armed;
        strand.Submit(task.GetHandle());
        allocations = armed.Count();
    }
    base.RunAll();
    CHECK(task.Done());
    CHECK(allocations == 0);
}

TEST_CASE("A pump that cannot be replaced after a task throws leaves the queue to the next submit",
          "[strands][allocation]")
{
    TCTest::ManualExecutor base;
    Strand strand(base);
    int ran = 0;
    strand.Post([] { throw TaskFailed{}; });
    strand.Post([&ran] { ++ran; });
    bool threw = false;
    long made = 0;
    {
        Armed armed(1); // the replacement pump's frame is the turn's first allocation
        try
        {
            base.RunOne();
        }
        catch (const TaskFailed&)
        {
            threw = true;
        }
        made = armed.Count();
    }
    REQUIRE(threw);
    REQUIRE(made == 1);
    // Documented: nothing is lost and nothing runs; the strand is not idle, and no pump is
    // queued on the base until the next submit makes one.
    CHECK(base.Pending() == 0);
    CHECK(ran == 0);
    CHECK_FALSE(strand.Idle());
    strand.Post([&ran] { ran += 10; });
    CHECK(base.Pending() == 1);
    base.RunAll();
    CHECK(ran == 11); // the queue's work first, in order, then the new post
    CHECK(strand.Idle());
}

// The strand's queue (StrandQueue) directly: a backlog that keeps spanning segment boundaries
// reuses its emptied segments, and one that drained gives all but a few back.
namespace
{
void PushTo(detail::StrandQueue& queue)
{
    queue.Reserve();
    queue.Slot() = detail::StrandEntry{};
    queue.Commit();
}

std::size_t Drain(detail::StrandQueue& queue, std::size_t most)
{
    detail::StrandEntry chunk[16];
    std::size_t drained = 0;
    while (drained < most)
    {
        const std::size_t taken = queue.TakeChunk(chunk, std::min<std::size_t>(16, most - drained));
        if (taken == 0)
            break;
        drained += taken;
    }
    queue.EndTake();
    return drained;
}

// Fills `queue` with `backlog` entries and drains `backlog - standing`, then moves a standing
// backlog of `standing` through it (600 in, 600 out per round): 20 rounds to warm up, then the
// allocations of 200 more. Leaves the queue empty.
long StandingBacklogAllocations(detail::StrandQueue& queue, std::size_t backlog,
                                std::size_t standing)
{
    for (std::size_t i = 0; i < backlog; ++i)
        PushTo(queue);
    REQUIRE(Drain(queue, backlog - standing) == backlog - standing);
    long allocations = 0;
    for (int round = 0; round < 220; ++round)
    {
        std::size_t drained = 0;
        long counted = 0;
        {
            Armed armed;
            for (int i = 0; i < 600; ++i)
                PushTo(queue);
            drained = Drain(queue, 600);
            counted = armed.Count();
        }
        REQUIRE(drained == 600);
        if (round >= 20) // the first 20 rounds warm up
            allocations += counted;
    }
    CHECK(queue.Count() == standing);
    Drain(queue, standing);
    CHECK(queue.Empty());
    return allocations;
}
} // namespace

TEST_CASE("A strand queue's standing backlog across segments allocates nothing",
          "[strands][allocation]")
{
    // A backlog of 3000 grows the segments to the largest size; a standing backlog of about 1500
    // then moves through them: every segment the head leaves is one the tail reuses.
    detail::StrandQueue queue(16);
    CHECK(StandingBacklogAllocations(queue, 3000, 1500) == 0);
}

TEST_CASE("A strand queue gives a drained backlog's segments back", "[strands][allocation]")
{
    detail::StrandQueue queue(16);
    constexpr std::size_t kBacklog = 100'000;
    constexpr std::size_t kSegments = kBacklog / detail::StrandQueue::kMaxSegmentEntries;
    for (std::size_t i = 0; i < kBacklog; ++i)
        PushTo(queue);
    REQUIRE(Drain(queue, kBacklog) == kBacklog);
    long allocations = 0;
    {
        Armed armed;
        for (std::size_t i = 0; i < kBacklog; ++i)
            PushTo(queue);
        allocations = armed.Count();
    }
    // Only the spares (and the tail segment the drain left) were kept: the same backlog again
    // allocates nearly all of its segments anew. A ring that never shrinks would allocate none.
    CHECK(allocations >= static_cast<long>(kSegments - detail::StrandQueue::kSpareSegments - 1));
    CHECK(allocations <= static_cast<long>(kSegments + 1));
    REQUIRE(Drain(queue, kBacklog) == kBacklog);
}

TEST_CASE("A strand queue with a first segment past the largest growth still reuses its segments",
          "[strands][allocation]")
{
    // initialCapacity 2000: later segments are 512 entries; the first and those all serve as
    // spares, so a standing backlog past the first segment allocates nothing either.
    detail::StrandQueue queue(2000);
    CHECK(StandingBacklogAllocations(queue, 4000, 1500) == 0);
}
