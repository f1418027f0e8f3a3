// ChannelCore: the lock-free block list values pass through (see ChannelCore.h), its block pool
// and its destruction.

#include <TC/Checked.h>
#include <TC/Synchronization/detail/ChannelCore.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <thread>

namespace TC::Synchronization::detail
{
namespace
{
// Positions run kChannelBlockSlots + 1 per block: the extra one (offset == kChannelBlockSlots)
// stands for "the next block is being linked"; whoever reads it waits and reads again.
constexpr std::uint64_t kLap = kChannelBlockSlots + 1;

// A slot's two words. `written` is stored once by the slot's sender; `done` is what receivers
// use to decide who frees the block (a read-modify-write, since a reader and the block's
// destroyer may set their bits at the same time).
struct SlotHeader
{
    std::atomic<std::uint32_t> written{0};
    std::atomic<std::uint32_t> done{0};
};
constexpr std::uint32_t kWritten = 1;
constexpr std::uint32_t kSkipped = 2; // the send's construction threw: nothing to receive here
constexpr std::uint32_t kRead = 1;    // this slot's receiver is finished with it
constexpr std::uint32_t kDestroy = 2; // the block's destroyer passed here first: finish for it

// A sender that found a bounded channel full and spins (a thread) waits for this much room:
// a quarter of the capacity, so the receivers still have three quarters queued while it waits,
// and at most 64, about what a receiver frees during the spin (SplitGate::SpinForPermit).
constexpr std::uint64_t RoomSpinBatch(std::size_t capacity) noexcept
{
    return std::clamp<std::uint64_t>(capacity / 4, 1, 64);
}

constexpr std::size_t RoundUp(std::size_t value, std::size_t to) noexcept
{
    return (value + to - 1) / to * to;
}

// Waits for another thread that is a few instructions from finishing (a sender between its
// claim and its write, a sender linking the next block); yields in case it was preempted.
class Backoff
{
public:
    void Pause() noexcept
    {
        if (++spins_ < 64)
            CpuRelax();
        else
            std::this_thread::yield();
    }

private:
    unsigned spins_ = 0;
};
} // namespace

struct ChannelCore::Block
{
    std::atomic<Block*> next{nullptr}; // linked by the sender of this block's last slot
    Block* poolNext = nullptr;         // in the spare pool
};

namespace
{
constexpr std::size_t kSlotsOffset = 64; // slots start on the block's second cache line
static_assert(sizeof(void*) * 2 <= kSlotsOffset);
} // namespace

ChannelCore::ChannelCore(std::size_t valueSize, std::size_t valueAlign, std::size_t capacity,
                         void (*destroyValue)(void*) noexcept)
    : space(0, RoomSpinBatch(capacity)),
      poolLimit_(capacity ? (capacity + kChannelBlockSlots - 1) / kChannelBlockSlots + 2 : 8),
      valueOffset_(RoundUp(sizeof(SlotHeader), valueAlign)),
      slotStride_(RoundUp(valueOffset_ + valueSize, std::max(alignof(SlotHeader), valueAlign))),
      blockAlign_(std::max<std::size_t>(64, valueAlign)),
      blockBytes_(RoundUp(kSlotsOffset, blockAlign_) + kChannelBlockSlots * slotStride_),
      destroyValue_(destroyValue), bounded_(capacity != 0)
{
    Block* first = NewBlock();
    head_.block.store(first, std::memory_order_relaxed);
    tail_.block.store(first, std::memory_order_relaxed);
    if (!bounded_)
        return;
    // Every block a full channel can span, with one being freed and one being linked: a bounded
    // channel never allocates after this.
    try
    {
        for (std::size_t i = 0; i < poolLimit_; ++i)
            RecycleBlock(::new (::operator new(blockBytes_, std::align_val_t(blockAlign_))) Block);
    }
    catch (...)
    {
        FreeBlock(first);
        for (Block* block = pool_; block;)
            FreeBlock(std::exchange(block, block->poolNext));
        throw;
    }
    space.Release(static_cast<std::int64_t>(capacity));
}

ChannelCore::~ChannelCore()
{
    // Nobody sends or receives now: every claimed slot was written and every claimed read
    // finished, so the slots from head to tail hold the values left, and every block before
    // head's was freed by its last reader.
    Block* block = head_.block.load(std::memory_order_acquire);
    const std::uint64_t end = tail_.index.load(std::memory_order_acquire);
    for (std::uint64_t position = head_.index.load(std::memory_order_acquire); position != end;
         ++position)
    {
        const auto offset = static_cast<std::uint32_t>(position % kLap);
        if (offset == kChannelBlockSlots)
        {
            Block* next = block->next.load(std::memory_order_acquire);
            FreeBlock(block);
            block = next;
            continue;
        }
        auto* header = static_cast<SlotHeader*>(SlotAt(block, offset));
        if (destroyValue_ && header->written.load(std::memory_order_acquire) == kWritten)
            destroyValue_(reinterpret_cast<std::byte*>(header) + valueOffset_);
    }
    FreeBlock(block);
    for (Block* spare = pool_; spare;)
        FreeBlock(std::exchange(spare, spare->poolNext));
}

void* ChannelCore::SlotAt(Block* block, std::uint32_t offset) const noexcept
{
    return reinterpret_cast<std::byte*>(block) + RoundUp(kSlotsOffset, blockAlign_)
           + std::size_t{offset} * slotStride_;
}

ChannelCore::Block* ChannelCore::NewBlock()
{
    Block* block = nullptr;
    {
        std::lock_guard guard(poolLock_);
        if (pool_)
        {
            block = pool_;
            pool_ = block->poolNext;
            --pooled_;
        }
    }
    if (!block)
        block = ::new (::operator new(blockBytes_, std::align_val_t(blockAlign_))) Block;
    // Fresh words for a block that may have been used before; it is published to other threads
    // only through release stores of its address (tail_.block, the previous block's next).
    block->next.store(nullptr, std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < kChannelBlockSlots; ++i)
        ::new (SlotAt(block, i)) SlotHeader;
    return block;
}

void ChannelCore::RecycleBlock(Block* block) noexcept
{
    {
        std::lock_guard guard(poolLock_);
        if (pooled_ < poolLimit_)
        {
            block->poolNext = pool_;
            pool_ = block;
            ++pooled_;
            return;
        }
    }
    FreeBlock(block);
}

void ChannelCore::FreeBlock(Block* block) noexcept
{
    block->~Block();
    ::operator delete(block, std::align_val_t(blockAlign_));
}

ChannelCore::Slot ChannelCore::ClaimForSend()
{
    Backoff backoff;
    Block* next = nullptr; // allocated before claiming a block's last slot, so a claim never fails
    std::uint64_t tail;
    Block* block;
    tail_.Read(tail, block);
    for (;;)
    {
        const auto offset = static_cast<std::uint32_t>(tail % kLap);
        if (offset == kChannelBlockSlots)
        {
            // Another sender claimed the last slot and is linking the next block.
            backoff.Pause();
            tail_.Read(tail, block);
            continue;
        }
        if (offset + 1 == kChannelBlockSlots && !next)
        {
            try
            {
                next = NewBlock();
            }
            catch (...)
            {
                if (bounded_)
                    space.Release(1); // the room granted for this send is unused
                throw;
            }
        }
        // acq_rel: orders this claim after the previous sender's (their slot came first) and
        // makes the block pointer read above current whenever the claim succeeds.
        if (tail_.index.compare_exchange_weak(tail, tail + 1, std::memory_order_acq_rel,
                                              std::memory_order_acquire))
        {
            if (offset + 1 == kChannelBlockSlots)
            {
                // This send took the last slot: link the next block and step over the gap.
                // release: a sender that reads the new index or block sees the block's reset.
                tail_.block.store(next, std::memory_order_release);
                tail_.index.fetch_add(1, std::memory_order_release);
                block->next.store(next, std::memory_order_release);
                next = nullptr;
            }
            if (next)
                RecycleBlock(next); // allocated for a claim that went to another sender
            return Slot{block, offset,
                        static_cast<std::byte*>(SlotAt(block, offset)) + valueOffset_};
        }
        block = tail_.block.load(std::memory_order_acquire);
        backoff.Pause();
    }
}

void ChannelCore::Publish(const Slot& slot) noexcept
{
    auto* header = static_cast<SlotHeader*>(SlotAt(static_cast<Block*>(slot.block), slot.offset));
    // release: the value's construction is visible to the receiver that reads kWritten.
    header->written.store(kWritten, std::memory_order_release);
    items.Release(1);
}

void ChannelCore::Abandon(const Slot& slot) noexcept
{
    auto* header = static_cast<SlotHeader*>(SlotAt(static_cast<Block*>(slot.block), slot.offset));
    header->written.store(kSkipped, std::memory_order_release);
    if (bounded_)
        space.Release(1);
}

ChannelCore::Slot ChannelCore::ClaimForReceive() noexcept
{
    Backoff backoff;
    std::uint64_t head;
    Block* block;
    head_.Read(head, block);
    for (;;)
    {
        const auto offset = static_cast<std::uint32_t>(head % kLap);
        if (offset == kChannelBlockSlots)
        {
            // Another receiver took the block's last slot and is moving head_ to the next one.
            backoff.Pause();
            head_.Read(head, block);
            continue;
        }
        // acq_rel, as for the tail: the block read above is current when the claim succeeds.
        if (!head_.index.compare_exchange_weak(head, head + 1, std::memory_order_acq_rel,
                                               std::memory_order_acquire))
        {
            block = head_.block.load(std::memory_order_acquire);
            backoff.Pause();
            continue;
        }
        if (offset + 1 == kChannelBlockSlots)
        {
            // The sender of this slot claimed it before this receive could (items granted a value
            // at or after it), and links the next block right after its claim.
            Block* next = block->next.load(std::memory_order_acquire);
            Backoff linking;
            while (!next)
            {
                linking.Pause();
                next = block->next.load(std::memory_order_acquire);
            }
            head_.block.store(next, std::memory_order_release);
            head_.index.store(head + 2, std::memory_order_release);
        }
        auto* header = static_cast<SlotHeader*>(SlotAt(block, offset));
        // acquire: pairs with Publish's release; the value is constructed once kWritten shows.
        std::uint32_t written = header->written.load(std::memory_order_acquire);
        Backoff writing;
        while (written == 0)
        {
            writing.Pause();
            written = header->written.load(std::memory_order_acquire);
        }
        if (written == kWritten)
            return Slot{block, offset, reinterpret_cast<std::byte*>(header) + valueOffset_};
        // A send that threw: nothing here. The value `items` granted is in a later slot.
        ReleaseSlot(block, offset);
        head_.Read(head, block);
    }
}

void ChannelCore::Consumed(const Slot& slot) noexcept
{
    ReleaseSlot(static_cast<Block*>(slot.block), slot.offset);
    if (bounded_)
        space.Release(1);
}

void ChannelCore::ReleaseSlot(Block* block, std::uint32_t offset) noexcept
{
    if (offset + 1 == kChannelBlockSlots)
    {
        // The last slot's receiver starts the block's destruction; the block can no longer be
        // reached through head_, which moved on when this slot was claimed.
        DestroyFrom(block, 0);
        return;
    }
    // acq_rel: this receiver's reads of the value happen before whoever frees the block.
    auto* header = static_cast<SlotHeader*>(SlotAt(block, offset));
    if (header->done.fetch_or(kRead, std::memory_order_acq_rel) & kDestroy)
        DestroyFrom(block, offset + 1); // the destroyer left the rest to this receiver
}

void ChannelCore::DestroyFrom(Block* block, std::uint32_t start) noexcept
{
    // Every slot but the last (whose receiver began this) must be read before the block goes;
    // a slot still being read is marked, and its receiver carries on from there when done.
    for (std::uint32_t i = start; i + 1 < kChannelBlockSlots; ++i)
    {
        auto* header = static_cast<SlotHeader*>(SlotAt(block, i));
        if ((header->done.load(std::memory_order_acquire) & kRead) == 0
            && (header->done.fetch_or(kDestroy, std::memory_order_acq_rel) & kRead) == 0)
            return;
    }
    RecycleBlock(block);
}

void ChannelCore::Close() noexcept
{
    items.Close();
    space.Close();
}
} // namespace TC::Synchronization::detail
