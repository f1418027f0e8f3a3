// StrandQueue: the segment chain behind a strand's queue (growth, recycling, hand-over).

#include <TC/Strands/detail/StrandQueue.h>

#include <algorithm>
#include <limits>
#include <new>

namespace TC::detail
{
StrandSegment* StrandQueue::NewSegment(std::size_t capacity)
{
    // An initialCapacity past what memory can hold fails as new[] would, not by wrapping round.
    if (capacity >
        (std::numeric_limits<std::size_t>::max() - sizeof(StrandSegment)) / sizeof(StrandEntry))
        throw std::bad_array_new_length();
    void* memory = ::operator new (sizeof(StrandSegment) + capacity * sizeof(StrandEntry),
                                   std::align_val_t{alignof(StrandSegment)});
    auto* segment = ::new (memory) StrandSegment;
    segment->capacity = capacity;
    return segment;
}

void StrandQueue::FreeSegment(StrandSegment* segment) noexcept
{
    ::operator delete (static_cast<void*>(segment), std::align_val_t{alignof(StrandSegment)});
}

StrandQueue::~StrandQueue()
{
    for (StrandSegment* chain : {head_, spare_})
        while (chain)
            FreeSegment(std::exchange(chain, chain->next));
}

void StrandQueue::ReserveSlow()
{
    if (!tail_)
    {
        StrandSegment* first =
            spare_ ? spare_ : NewSegment(std::max(segmentSize_, initialCapacity_));
        if (first == spare_)
        {
            spare_ = first->next;
            --spareCount_;
            first->next = nullptr;
        }
        segmentSize_ = std::max(segmentSize_, first->capacity);
        head_ = tail_ = first;
        headIndex_ = tailIndex_ = 0;
        return;
    }
    if (count_ == 0 && taken_ == 0)
        return Rewind();
    StrandSegment* next;
    if (spare_)
    {
        next = std::exchange(spare_, spare_->next);
        --spareCount_;
        next->next = nullptr;
    }
    else
    {
        next = NewSegment(std::min(segmentSize_ * 2, kMaxSegmentEntries)); // may throw
        segmentSize_ = next->capacity;
    }
    tail_->next = next;
    tail_ = next;
    tailIndex_ = 0;
}

void StrandQueue::Rewind() noexcept
{
    // Everything was run and nothing can be put back: start again at the front of the tail
    // segment (still warm), and keep the ones before it as spares.
    while (head_ != tail_)
        Recycle(std::exchange(head_, head_->next));
    headIndex_ = tailIndex_ = 0;
}

void StrandQueue::AdvanceHead() noexcept
{
    // Called with entries left (so a next segment holds them) and no chunk held for PutBack.
    Recycle(std::exchange(head_, head_->next));
    headIndex_ = 0;
}

void StrandQueue::Recycle(StrandSegment* segment) noexcept
{
    // Only segments of the size growth has reached are kept: a small one reused as the tail
    // would fill at once, and growing past it again would start over from its size.
    if (spareCount_ == kSpareSegments || segment->capacity < segmentSize_)
    {
        FreeSegment(segment);
        return;
    }
    segment->next = spare_;
    spare_ = segment;
    ++spareCount_;
}

TakenEntries StrandQueue::TakeAll() noexcept
{
    taken_ = 0;
    if (count_ == 0)
        return {}; // the segments stay for the next submit
    TakenEntries entries(head_, headIndex_, count_);
    head_ = tail_ = nullptr;
    headIndex_ = tailIndex_ = count_ = 0;
    return entries;
}

TakenEntries::~TakenEntries()
{
    while (first_)
        StrandQueue::FreeSegment(std::exchange(first_, first_->next));
}

void TakenEntries::DropAll() noexcept
{
    StrandSegment* segment = first_;
    std::size_t index = index_;
    for (std::size_t left = std::exchange(count_, 0); left != 0; --left)
    {
        if (index == segment->capacity)
        {
            segment = segment->next;
            index = 0;
        }
        segment->Entries()[index++].Drop();
    }
    while (first_)
        StrandQueue::FreeSegment(std::exchange(first_, first_->next));
}
} // namespace TC::detail
