// StrandQueue: a strand's segmented FIFO -- order across segments, a chunk put back in front,
// hand-over of a backlog that spans segments, and a backlog's growth that never moves an entry.

#include <TC/Strands/detail/StrandQueue.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using TC::detail::StrandEntry;
using TC::detail::StrandQueue;

namespace
{
// An entry that carries a number in its inline bytes.
struct Numbered
{
    static void Run(void*) {}
};

StrandEntry Make(std::uint32_t value)
{
    StrandEntry entry;
    entry.run = &Numbered::Run;
    static_assert(sizeof(entry.words) >= sizeof(value));
    __builtin_memcpy(entry.words, &value, sizeof(value));
    return entry;
}

// A call that records its number when dropped (Destroy), for the order of a hand-over's drop.
class RecordingCall final : public TC::detail::CallBase
{
public:
    RecordingCall(std::uint32_t value, std::vector<std::uint32_t>& dropped)
        : value_(value), dropped_(dropped)
    {
    }
    void Run() override {}
    void Destroy() noexcept override { dropped_.push_back(value_); }

private:
    std::uint32_t value_;
    std::vector<std::uint32_t>& dropped_;
};

std::uint32_t ValueOf(const StrandEntry& entry)
{
    std::uint32_t value;
    __builtin_memcpy(&value, entry.words, sizeof(value));
    return value;
}

void Push(StrandQueue& queue, std::uint32_t value)
{
    queue.Reserve();
    queue.Slot() = Make(value);
    queue.Commit();
}

const StrandEntry* SlotAddress(StrandQueue& queue)
{
    queue.Reserve();
    return &queue.Slot();
}

// Takes everything in chunks of `chunk`, appending the values to `into`.
void TakeAllInChunks(StrandQueue& queue, std::size_t chunk, std::vector<std::uint32_t>& into)
{
    std::vector<StrandEntry> buffer(chunk);
    while (std::size_t taken = queue.TakeChunk(buffer.data(), chunk))
        for (std::size_t i = 0; i < taken; ++i)
            into.push_back(ValueOf(buffer[i]));
    queue.EndTake();
}
} // namespace

TEST_CASE("StrandQueue keeps FIFO order across segments and chunk sizes", "[queue]")
{
    for (std::size_t initial : {1u, 2u, 16u, 100u})
        for (std::size_t chunk : {1u, 7u, 16u, 600u})
        {
            StrandQueue queue(initial);
            std::vector<std::uint32_t> seen;
            std::uint32_t next = 0;
            // Interleaved bursts: a backlog of 5000 (many segments), then short ones.
            for (std::uint32_t burst : {5000u, 3u, 0u, 1u, 700u, 2u})
            {
                for (std::uint32_t i = 0; i < burst; ++i)
                    Push(queue, next++);
                CHECK(queue.Count() == burst);
                TakeAllInChunks(queue, chunk, seen);
                CHECK(queue.Empty());
            }
            REQUIRE(seen.size() == next);
            for (std::uint32_t i = 0; i < next; ++i)
                REQUIRE(seen[i] == i);
        }
}

TEST_CASE("StrandQueue never moves a queued entry when it grows", "[queue]")
{
    StrandQueue queue(4);
    std::vector<const StrandEntry*> addresses;
    for (std::uint32_t i = 0; i < 3000; ++i)
    {
        addresses.push_back(SlotAddress(queue));
        Push(queue, i);
    }
    // Every entry is still where it was written: take them one at a time and compare by value
    // through the address recorded at its push.
    StrandEntry taken;
    for (std::uint32_t i = 0; i < 3000; ++i)
    {
        REQUIRE(ValueOf(*addresses[i]) == i);
        REQUIRE(queue.TakeChunk(&taken, 1) == 1);
        REQUIRE(ValueOf(taken) == i);
    }
    queue.EndTake();
    CHECK(queue.Empty());
}

TEST_CASE("StrandQueue puts a chunk's untried entries back in front of later pushes", "[queue]")
{
    // A chunk that ends exactly at a segment's end (4 + 8 + 16: the third segment's last slots),
    // with more queued in the next segment and pushed after the take.
    StrandQueue queue(4);
    for (std::uint32_t i = 0; i < 40; ++i)
        Push(queue, i);
    std::vector<std::uint32_t> seen;
    StrandEntry chunk[16];
    REQUIRE(queue.TakeChunk(chunk, 4) == 4);
    REQUIRE(queue.TakeChunk(chunk, 8) == 8);
    REQUIRE(queue.TakeChunk(chunk, 16) == 16); // values 12..27, the whole third segment
    CHECK(ValueOf(chunk[0]) == 12);
    for (std::uint32_t i = 40; i < 100; ++i)
        Push(queue, i); // pushed while the chunk runs
    // The task for value 12 ran (and threw): 13..27 go back, ahead of 28..99.
    queue.PutBack(chunk + 1, 15);
    CHECK(queue.Count() == 87);
    TakeAllInChunks(queue, 16, seen);
    REQUIRE(seen.size() == 87);
    for (std::uint32_t i = 0; i < 87; ++i)
        REQUIRE(seen[i] == 13 + i);
}

TEST_CASE("StrandQueue hands over a backlog that spans segments, whole and in order", "[queue]")
{
    std::vector<std::uint32_t> dropped;
    std::vector<RecordingCall> calls;
    calls.reserve(1000);
    StrandQueue queue(2);
    for (std::uint32_t i = 0; i < 1000; ++i)
    {
        calls.emplace_back(i, dropped);
        queue.Reserve();
        queue.Slot() = StrandEntry{};
        queue.Slot().SetHeldCall(&calls.back());
        queue.Commit();
    }
    StrandEntry chunk[3];
    REQUIRE(queue.TakeChunk(chunk, 3) == 2); // never past the first segment's end
    {
        TC::detail::TakenEntries entries = queue.TakeAll();
        CHECK(entries.Count() == 998);
        CHECK(queue.Empty());
        Push(queue, 5000); // usable at once: the hand-over left it no segment
        TC::detail::TakenEntries moved = std::move(entries);
        CHECK(entries.Count() == 0);
        CHECK(moved.Count() == 998);
        moved.DropAll();
        CHECK(moved.Count() == 0);
    }
    REQUIRE(dropped.size() == 998);
    for (std::uint32_t i = 0; i < 998; ++i)
        REQUIRE(dropped[i] == i + 2);
    REQUIRE(queue.TakeChunk(chunk, 3) == 1);
    CHECK(ValueOf(chunk[0]) == 5000);
    queue.EndTake();
    CHECK(queue.TakeAll().Count() == 0);
}
