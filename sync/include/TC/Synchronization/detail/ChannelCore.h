#pragma once
// ChannelCore: the type-erased part of Channel<T> -- a lock-free FIFO of value slots in linked
// blocks, a pool of spare blocks, and the two counting gates.

#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/SplitGate.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace TC::Synchronization::detail
{
// A FIFO of linked blocks of slots (as crossbeam's unbounded channel): each side claims slots by
// CAS on its own position counter, so values arrive in claim order.
/// - Every wait is a wait on a SplitGate (`items`, `space`); a receiver claims a slot only after
///   `items` granted a value.
/// - Freed blocks go to a pool senders take from first: a steady flow allocates nothing; a
///   bounded channel pre-fills the pool. Design: guides/design-notes.md.
inline constexpr std::uint32_t kChannelBlockSlots = 31;

class TC_API ChannelCore
{
public:
    // One slot a Claim... call handed out: where its value lives.
    struct Slot
    {
        void* block;
        std::uint32_t offset;
        void* storage;
    };

    // `destroyValue` destroys a value still held when the channel goes (nullptr: trivially
    // destructible). Throws std::bad_alloc when the first block cannot be allocated.
    ChannelCore(std::size_t valueSize, std::size_t valueAlign, std::size_t capacity,
                void (*destroyValue)(void*) noexcept);
    ~ChannelCore();
    ChannelCore(const ChannelCore&) = delete;
    ChannelCore& operator=(const ChannelCore&) = delete;

    bool Bounded() const noexcept { return bounded_; }

    // ---- a send: Claim, construct the value in slot.storage, then Publish (or Abandon) ----
    // Bounded: only after `space` granted room. std::bad_alloc if a needed block cannot be had;
    // nothing claimed then (granted room given back).
    Slot ClaimForSend();
    // The value is constructed: the slot becomes readable and a receiver is woken.
    void Publish(const Slot& slot) noexcept;
    // Constructing the value threw: receivers skip the slot (its room is given back).
    void Abandon(const Slot& slot) noexcept;

    // ---- a receive: Claim, move the value out of slot.storage and destroy it, then Consumed ----
    // Call only after `items` granted a value; returns a written slot.
    Slot ClaimForReceive() noexcept;
    // The value is gone: the slot is done (a bounded channel's room is given back).
    void Consumed(const Slot& slot) noexcept;

    // Closes both gates: waiting senders and receivers resume with Closed; receivers still
    // drain what was sent before.
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

        // acquire, index then block: the block read is at least as new as the index the claim
        // checks.
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

    // Apart: senders write tail_, receivers head_, and neither should take the other's line.
    alignas(64) Position head_;
    alignas(64) Position tail_;
    alignas(64) SpinLock poolLock_; // spare blocks; touched once per block, not per value
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
