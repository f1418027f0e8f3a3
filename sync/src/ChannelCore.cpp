// ChannelCore: slot storage, the FIFO rings and the moodycamel free-slot queue (moodycamel stays
// in this file).

#include <TC/Checked.h>
#include <TC/Synchronization/detail/ChannelCore.h>
#include <TC/Synchronization/detail/SpinLock.h>

#include <concurrentqueue.h>

#include <array>
#include <bit>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define TC_SYNC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TC_SYNC_TSAN 1
#endif
#endif

#if TC_SYNC_TSAN
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace TC::Synchronization::detail
{
namespace
{
// moodycamel orders its blocks with std::atomic_thread_fence, which ThreadSanitizer does not
// model (tests/sanitizers/tsan.supp suppresses the queue's own frames). What travels through the
// queues -- a slot index, and with it the slot's value and the chunk pointer -- is ordered for
// TSan explicitly: a release on the queues' address before each enqueue, an acquire after each
// dequeue. Coarse (one address for all), and only in TSan builds.
inline void AnnotateRelease([[maybe_unused]] void* address) noexcept
{
#if TC_SYNC_TSAN
    __tsan_release(address);
#endif
}

inline void AnnotateAcquire([[maybe_unused]] void* address) noexcept
{
#if TC_SYNC_TSAN
    __tsan_acquire(address);
#endif
}

constexpr unsigned kFirstChunkShift = 6; // unbounded chunks: 64, 128, 256, ... slots
constexpr std::size_t kMaxChunks = 26;   // 64 * (2^26 - 1) slots: beyond any 32-bit index
} // namespace

// The FIFO every value passes through: a power-of-two ring of trivially copyable cells under a
// spinlock, doubled (under the lock) when full. One queue with one order, so values are received
// in the order their sends were queued -- which a per-thread sub-queue design (moodycamel) does
// not give a task that sends, suspends, and sends again from another worker. Held for a few
// stores; the counting gates, not this lock, are where callers wait.
template <class Cell>
class FifoRing
{
public:
    explicit FifoRing(std::size_t reserve) { Reserve(reserve); }

    // Makes room for `count` cells in all; throws std::bad_alloc (nothing changed) if it cannot.
    void Reserve(std::size_t count)
    {
        std::lock_guard guard(lock_);
        if (count > capacity_)
            GrowLocked(std::bit_ceil(count));
    }

    // Grows when full (throws std::bad_alloc then, nothing queued); never grows, and so never
    // throws, while Reserve made room for everything that can be in it.
    void Push(const Cell& cell)
    {
        std::lock_guard guard(lock_);
        if (count_ == capacity_)
            GrowLocked(capacity_ == 0 ? 64 : capacity_ * 2);
        cells_[(head_ + count_) & (capacity_ - 1)] = cell;
        ++count_;
    }

    // For a receiver the gate granted: the push came before the Release that made the grant, so
    // a cell is there.
    void PopGranted(Cell& cell) noexcept
    {
        [[maybe_unused]] const bool popped = Pop(cell);
        TC_CHECK(popped, "a granted receive finds its value",
                 "Channel: granted, but the queue was empty");
    }

    bool Pop(Cell& cell) noexcept
    {
        std::lock_guard guard(lock_);
        if (count_ == 0)
            return false;
        cell = cells_[head_];
        head_ = (head_ + 1) & (capacity_ - 1);
        --count_;
        return true;
    }

private:
    void GrowLocked(std::size_t capacity)
    {
        std::unique_ptr<Cell[]> cells(new Cell[capacity]); // the only throw, before any change
        for (std::size_t i = 0; i < count_; ++i)
            cells[i] = cells_[(head_ + i) & (capacity_ - 1)];
        cells_ = std::move(cells);
        capacity_ = capacity;
        head_ = 0;
    }

    SpinLock lock_;
    std::unique_ptr<Cell[]> cells_;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

struct ChannelCore::Queues
{
    explicit Queues(std::size_t reserve) : full(reserve) {}

    // Full slots in send order; room for every slot is reserved as slots are made, so a commit
    // never grows it.
    FifoRing<std::uint32_t> full;
    // Free slots: their order does not matter, so the lock-free moodycamel queue.
    moodycamel::ConcurrentQueue<std::uint32_t> free;
    // Written under growMutex before the new indices are queued; readers reach an index only
    // through the queues, whose enqueue/dequeue order the pointer's write before its read.
    std::array<std::byte*, kMaxChunks> chunks{};
    std::size_t chunkCount = 0;
    std::uint64_t slotCount = 0;
    std::mutex growMutex;
};

struct ChannelCore::InlineQueue
{
    explicit InlineQueue(std::size_t reserve) : cells(reserve) {}

    FifoRing<InlineCell> cells;
};

ChannelCore::ChannelCore(std::size_t slotSize, std::size_t slotAlign, std::size_t capacity,
                         bool inlineValues)
    : slotSize_((slotSize + slotAlign - 1) / slotAlign * slotAlign), slotAlign_(slotAlign),
      bounded_(capacity != 0)
{
    if (inlineValues)
    {
        // Bounded: the ring never grows, as the gate lets at most `capacity` cells in.
        inline_ = std::make_unique<InlineQueue>(bounded_ ? capacity : 64);
        if (bounded_)
            space.Release(static_cast<std::int64_t>(capacity));
        return;
    }
    if (capacity > UINT32_MAX)
        throw std::length_error("Channel capacity above 2^32 - 1");
    queues_ = std::make_unique<Queues>(capacity);
    if (bounded_)
    {
        queues_->chunks[0] = static_cast<std::byte*>(
            ::operator new(slotSize_* capacity, std::align_val_t(slotAlign_)));
        queues_->chunkCount = 1;
        queues_->slotCount = capacity;
        std::vector<std::uint32_t> indices(capacity);
        for (std::size_t i = 0; i < capacity; ++i)
            indices[i] = static_cast<std::uint32_t>(i);
        queues_->free.enqueue_bulk(indices.data(), indices.size());
        space.Release(static_cast<std::int64_t>(capacity));
    }
}

ChannelCore::~ChannelCore()
{
    if (!queues_)
        return; // inline values are trivially destructible: the ring frees its cells
    for (std::size_t i = 0; i < queues_->chunkCount; ++i)
        ::operator delete(queues_->chunks[i], std::align_val_t(slotAlign_));
}

void ChannelCore::PushInline(const InlineCell& cell)
{
    try
    {
        inline_->cells.Push(cell);
    }
    catch (...)
    {
        if (bounded_)
            space.Release(1); // the room granted for it is unused
        throw;
    }
    items.Release(1);
}

void ChannelCore::PopInline(InlineCell& cell) noexcept
{
    inline_->cells.PopGranted(cell);
    if (bounded_)
        space.Release(1);
}

void* ChannelCore::SlotAddress(std::uint32_t index) const noexcept
{
    if (bounded_)
        return queues_->chunks[0] + std::size_t{index} * slotSize_;
    // Chunk k starts at index 64 * (2^k - 1) and holds 64 * 2^k slots.
    const std::uint64_t shifted = std::uint64_t{index} + (std::uint64_t{1} << kFirstChunkShift);
    const unsigned chunk = static_cast<unsigned>(std::bit_width(shifted)) - 1 - kFirstChunkShift;
    const std::uint64_t offset = shifted - (std::uint64_t{1} << (chunk + kFirstChunkShift));
    return queues_->chunks[chunk] + offset * slotSize_;
}

void* ChannelCore::TakeFreeSlot(std::uint32_t& index)
{
    if (queues_->free.try_dequeue(index))
    {
        AnnotateAcquire(queues_.get());
        return SlotAddress(index);
    }
    if (bounded_)
    {
        // `space` granted a slot, so a free index exists; its enqueue may still be finishing.
        while (!queues_->free.try_dequeue(index))
        {
        }
        AnnotateAcquire(queues_.get());
        return SlotAddress(index);
    }
    std::lock_guard guard(queues_->growMutex);
    if (queues_->free.try_dequeue(index)) // another sender grew it meanwhile
    {
        AnnotateAcquire(queues_.get());
        return SlotAddress(index);
    }
    const std::size_t chunk = queues_->chunkCount;
    if (chunk == kMaxChunks)
        throw std::length_error("Channel holds more than 2^32 values");
    const std::uint64_t slots = std::uint64_t{1} << (chunk + kFirstChunkShift);
    const std::uint64_t first = queues_->slotCount;
    if (first + slots > UINT32_MAX)
        throw std::length_error("Channel holds more than 2^32 - 1 values");
    std::vector<std::uint32_t> indices(static_cast<std::size_t>(slots - 1));
    queues_->full.Reserve(static_cast<std::size_t>(first + slots)); // so Commit never grows it
    auto* memory = static_cast<std::byte*>(
        ::operator new(slotSize_* static_cast<std::size_t>(slots), std::align_val_t(slotAlign_)));
    queues_->chunks[chunk] = memory;
    queues_->chunkCount = chunk + 1;
    queues_->slotCount = first + slots;
    for (std::size_t i = 0; i < indices.size(); ++i)
        indices[i] = static_cast<std::uint32_t>(first + 1 + i);
    AnnotateRelease(queues_.get());
    if (!queues_->free.enqueue_bulk(indices.data(), indices.size()))
        throw std::bad_alloc();
    index = static_cast<std::uint32_t>(first);
    return memory;
}

void ChannelCore::ReturnFreeSlot(std::uint32_t index) noexcept
{
    AnnotateRelease(queues_.get());
    while (!queues_->free.enqueue(index))
    {
    }
    if (bounded_)
        space.Release(1);
}

void ChannelCore::Commit(std::uint32_t index) noexcept
{
    // Never grows, so never throws: room for every slot was reserved when the slot was made.
    queues_->full.Push(index);
    items.Release(1);
}

void* ChannelCore::TakeFullSlot(std::uint32_t& index) noexcept
{
    queues_->full.PopGranted(index);
    return SlotAddress(index);
}

void ChannelCore::Recycle(std::uint32_t index) noexcept
{
    AnnotateRelease(queues_.get());
    while (!queues_->free.enqueue(index))
    {
    }
    if (bounded_)
        space.Release(1);
}

void ChannelCore::Close() noexcept
{
    items.Close();
    space.Close();
}

void* ChannelCore::TryTakeFullSlotForDestroy(std::uint32_t& index) noexcept
{
    if (!queues_->full.Pop(index))
        return nullptr;
    return SlotAddress(index);
}
} // namespace TC::Synchronization::detail
