#pragma once
// ChannelCore: the type-erased part of Channel<T>: a lock-free FIFO of slots in linked blocks,
// a pool of spare blocks, and the two counting gates.

#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/SplitGate.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace TC::Synchronization::detail
{
// Blocks of slots (as crossbeam's unbounded channel); values arrive in slot-claim order.
/// - Every wait is on a SplitGate (`items`, `space`); a receiver claims only after `items`.
/// - Freed blocks are pooled: a steady flow allocates nothing; bounded pre-fills the pool.
inline constexpr std::uint32_t kChannelBlockSlots = 31;

class TC_API ChannelCore
{
public:
    // A claimed slot: where its value lives.
    struct Slot
    {
        void* block;
        std::uint32_t offset;
        void* storage;
    };

    // `destroyValue` destroys values left over (nullptr: trivial). bad_alloc if no first block.
    ChannelCore(std::size_t valueSize, std::size_t valueAlign, std::size_t capacity,
                void (*destroyValue)(void*) noexcept);
    ~ChannelCore();
    ChannelCore(const ChannelCore&) = delete;
    ChannelCore& operator=(const ChannelCore&) = delete;

    bool Bounded() const noexcept { return bounded_; }

    // ---- send: Claim, construct in slot.storage, Publish (or Abandon) ----
    // Bounded: only after `space` granted room. bad_alloc: nothing claimed, room given back.
    Slot ClaimForSend();
    // Makes the slot readable and wakes a receiver.
    void Publish(const Slot& slot) noexcept;
    // The construction threw: receivers skip the slot; room given back.
    void Abandon(const Slot& slot) noexcept;

    // ---- receive: only after `items` granted a value; move out, destroy, Consumed ----
    Slot ClaimForReceive() noexcept;
    // The slot is done (a bounded channel's room given back).
    void Consumed(const Slot& slot) noexcept;

    // Resumes waiters with Closed; receivers still drain what was sent.
    void Close() noexcept;
    bool IsClosed() const noexcept { return items.IsClosed(); }

    SplitGate items;
    SplitGate space;

private:
    struct Block;
    struct Position
    {
        std::atomic<std::uint64_t> index{0}; // slot number, kChannelBlockSlots + 1 per block
        std::atomic<Block*> block{nullptr};

        // acquire, index then block: the block is at least as new as the index.
        void Read(std::uint64_t& at, Block*& in) const noexcept
        {
            at = index.load(std::memory_order_acquire);
            in = block.load(std::memory_order_acquire);
        }
    };

    Block* NewBlock();
    void RecycleBlock(Block* block) noexcept;
    void FreeBlock(Block* block) noexcept;
    void ReleaseSlot(Block* block, std::uint32_t offset) noexcept;
    void DestroyFrom(Block* block, std::uint32_t start) noexcept;
    void* SlotAt(Block* block, std::uint32_t offset) const noexcept;

    // Apart: senders write tail_, receivers head_.
    alignas(64) Position head_;
    alignas(64) Position tail_;
    alignas(64) SpinLock poolLock_; // spare blocks; once per block
    Block* pool_ = nullptr;
    std::size_t pooled_ = 0;
    std::size_t poolLimit_;
    std::size_t valueOffset_; // of the value within a slot
    std::size_t slotStride_;
    std::size_t blockAlign_;
    std::size_t blockBytes_;
    void (*destroyValue_)(void*) noexcept;
    bool bounded_;
};
} // namespace TC::Synchronization::detail
