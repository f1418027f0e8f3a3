#pragma once
// detail::StrandQueue: a strand's FIFO of entries in a chain of segments; the strand's lock
// guards every call. Growth links a segment on, never copying the backlog.

#include <TC/Strands/RunTask.h>
#include <TC/detail/Export.h>
#include <TC/detail/Prefetch.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

namespace TC::detail
{
// Aligned as an entry is, so the entries after it never span two cache lines.
struct alignas(alignof(StrandEntry)) StrandSegment
{
    StrandSegment* next = nullptr;
    std::size_t capacity = 0;

    StrandEntry* Entries() noexcept { return reinterpret_cast<StrandEntry*>(this + 1); }
};
static_assert(sizeof(StrandSegment) % alignof(StrandEntry) == 0);
static_assert(std::is_trivially_copyable_v<StrandEntry>); // copied in and out, never destroyed

// Entries taken out of a queue whole (QueueEntries::TakeAll): they own their segments, and are
// dropped (StrandEntry::Drop) or run by whoever took them.
class TC_API TakenEntries
{
public:
    TakenEntries() = default;
    TakenEntries(StrandSegment* first, std::size_t index, std::size_t count) noexcept
        : first_(first), index_(index), count_(count)
    {
    }
    TakenEntries(TakenEntries&& other) noexcept
        : first_(std::exchange(other.first_, nullptr)), index_(std::exchange(other.index_, 0)),
          count_(std::exchange(other.count_, 0))
    {
    }
    TakenEntries& operator=(TakenEntries&& other) noexcept
    {
        TakenEntries(std::move(other)).Swap(*this);
        return *this;
    }
    // Frees the segments; the entries must have been dropped (DropAll) or were none.
    ~TakenEntries();

    std::size_t Count() const noexcept { return count_; }
    // Drops every entry, in queue order, then frees the segments.
    void DropAll() noexcept;

private:
    void Swap(TakenEntries& other) noexcept
    {
        std::swap(first_, other.first_);
        std::swap(index_, other.index_);
        std::swap(count_, other.count_);
    }

    StrandSegment* first_ = nullptr; // a chain; every segment is ours
    std::size_t index_ = 0;          // the first entry's slot in first_
    std::size_t count_ = 0;
};

class TC_API StrandQueue
{
public:
    // The first segment holds `initialCapacity` (>= 2); each growth doubles, to kMaxSegmentEntries.
    static constexpr std::size_t kMaxSegmentEntries = 512;
    // Emptied segments kept for reuse (at most 4 x 28 KB): a swinging backlog allocates nothing.
    static constexpr std::size_t kSpareSegments = 4;
    // How far ahead Slot() prefetches a slot's line for writing (PrefetchForWrite).
    static constexpr std::size_t kWriteAhead = 4;

    explicit StrandQueue(std::size_t initialCapacity) noexcept
        : initialCapacity_(std::max<std::size_t>(initialCapacity, 2))
    {
    }
    StrandQueue(const StrandQueue&) = delete;
    StrandQueue& operator=(const StrandQueue&) = delete;
    // Frees the segments; whatever was still queued must have been taken (TakeAll) first.
    ~StrandQueue();

    std::size_t Count() const noexcept { return count_; }
    bool Empty() const noexcept { return count_ == 0; }

    // True when a Commit needs no Reserve first (the tail segment has a free slot).
    bool HasRoom() const noexcept { return tail_ && tailIndex_ < tail_->capacity; }

    // Makes room for one Commit; throws std::bad_alloc with nothing visible changed.
    void Reserve()
    {
        if (HasRoom())
            return;
        ReserveSlow();
    }

    // After Reserve: the slot the next Commit appends; not queued until Commit, so a throw while
    // filling it leaves the queue as it was.
    StrandEntry& Slot() noexcept
    {
        StrandEntry* entries = tail_->Entries();
        if (tailIndex_ + kWriteAhead < tail_->capacity)
            PrefetchForWrite(entries + tailIndex_ + kWriteAhead);
        return entries[tailIndex_];
    }
    void Commit() noexcept
    {
        ++tailIndex_;
        ++count_;
    }

    // Moves up to `most` front entries into `into` (at most the front segment's); they stay
    // reserved for PutBack until the next TakeChunk, EndTake or TakeAll.
    std::size_t TakeChunk(StrandEntry* into, std::size_t most) noexcept
    {
        EndTake();
        if (count_ == 0)
            return 0;
        const std::size_t taken = std::min({most, count_, head_->capacity - headIndex_});
        // memcpy begins the entries' lifetimes (StrandEntry is an implicit-lifetime aggregate).
        std::memcpy(static_cast<void*>(into), head_->Entries() + headIndex_,
                    taken * sizeof(StrandEntry));
        headIndex_ += taken;
        count_ -= taken;
        taken_ = taken;
        return taken;
    }
    // The last chunk will not be put back: emptied segments become spares; an empty queue
    // restarts at its tail segment's front.
    void EndTake() noexcept
    {
        taken_ = 0;
        if (count_ == 0)
        {
            if (tailIndex_ != 0)
                Rewind();
        }
        else if (headIndex_ == head_->capacity)
        {
            AdvanceHead();
        }
    }
    // Returns the last `count` entries of the last chunk to the front, ahead of newer ones.
    void PutBack(const StrandEntry* entries, std::size_t count) noexcept
    {
        headIndex_ -= count;
        std::copy_n(entries, count, head_->Entries() + headIndex_);
        count_ += count;
        taken_ = 0;
    }

    // Hands over everything queued with its segments; never allocates; ends a take.
    TakenEntries TakeAll() noexcept;

private:
    void ReserveSlow();
    void Rewind() noexcept;
    void AdvanceHead() noexcept;
    void Recycle(StrandSegment* segment) noexcept;
    static StrandSegment* NewSegment(std::size_t capacity);
    static void FreeSegment(StrandSegment* segment) noexcept;
    friend class TakenEntries;

    std::size_t initialCapacity_;
    // Entries run from (head_, headIndex_) to (tail_, tailIndex_), following `next`; slots
    // [headIndex_ - taken_, headIndex_) of head_ hold the last chunk, kept for PutBack.
    StrandSegment* head_ = nullptr;
    StrandSegment* tail_ = nullptr;
    std::size_t headIndex_ = 0;
    std::size_t tailIndex_ = 0;
    std::size_t count_ = 0;
    std::size_t taken_ = 0;
    std::size_t segmentSize_ = 0;    // the last segment growth allocated (or the first segment)
    StrandSegment* spare_ = nullptr; // at most kSpareSegments, each kept if >= segmentSize_ then
    std::size_t spareCount_ = 0;
};
} // namespace TC::detail
