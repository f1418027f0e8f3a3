#pragma once
// detail::StrandQueue: a strand's FIFO in a chain of segments, under the strand's lock. Growth
// links a segment on, never copying.

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
// Aligned as an entry, so no entry spans two cache lines.
struct alignas(alignof(StrandEntry)) StrandSegment
{
    StrandSegment* next = nullptr;
    std::size_t capacity = 0;

    StrandEntry* Entries() noexcept { return reinterpret_cast<StrandEntry*>(this + 1); }
};
static_assert(sizeof(StrandSegment) % alignof(StrandEntry) == 0);
static_assert(std::is_trivially_copyable_v<StrandEntry>); // copied in and out, never destroyed

// Entries taken out whole (TakeAll) with their segments; the taker runs or drops them.
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
    // Frees the segments; entries must have been dropped (DropAll).
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
    // First segment: `initialCapacity` (>= 2); growth doubles, to kMaxSegmentEntries.
    static constexpr std::size_t kMaxSegmentEntries = 512;
    // Emptied segments kept for reuse.
    static constexpr std::size_t kSpareSegments = 4;
    // How far ahead Slot() prefetches for writing.
    static constexpr std::size_t kWriteAhead = 4;

    explicit StrandQueue(std::size_t initialCapacity) noexcept
        : initialCapacity_(std::max<std::size_t>(initialCapacity, 2))
    {
    }
    StrandQueue(const StrandQueue&) = delete;
    StrandQueue& operator=(const StrandQueue&) = delete;
    // Frees the segments; anything queued must have been taken (TakeAll).
    ~StrandQueue();

    std::size_t Count() const noexcept { return count_; }
    bool Empty() const noexcept { return count_ == 0; }

    // A Commit needs no Reserve first.
    bool HasRoom() const noexcept { return tail_ && tailIndex_ < tail_->capacity; }

    // Makes room for one Commit; throws std::bad_alloc with nothing visible changed.
    void Reserve()
    {
        if (HasRoom())
            return;
        ReserveSlow();
    }

    // After Reserve: the slot the next Commit appends (not queued before).
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

    // Moves up to `most` front entries (of the front segment) into `into`, reserved for PutBack
    // until the next TakeChunk, EndTake or TakeAll.
    std::size_t TakeChunk(StrandEntry* into, std::size_t most) noexcept
    {
        EndTake();
        if (count_ == 0)
            return 0;
        const std::size_t taken = std::min({most, count_, head_->capacity - headIndex_});
        // memcpy begins the entries' lifetimes (implicit-lifetime aggregate).
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
    std::size_t segmentSize_ = 0;    // the last segment allocated
    StrandSegment* spare_ = nullptr; // at most kSpareSegments, each >= segmentSize_ when kept
    std::size_t spareCount_ = 0;
};
} // namespace TC::detail
