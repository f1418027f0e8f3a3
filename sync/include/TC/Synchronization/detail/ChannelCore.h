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
// The FIFO is a linked list of blocks of kChannelBlockSlots slots (the design of crossbeam's
// unbounded channel). A position counter per side names the next slot: a sender claims its slot
// with one compare-exchange on the tail counter, constructs the value in place and marks the slot
// written; a receiver claims the oldest slot with one compare-exchange on the head counter, moves
// the value out and marks the slot read. The counters live on cache lines of their own, so a
// sender and a receiver share only the slots' lines, each of which holds several values.
//
// Order: positions are claimed in one sequence, so values are received in the order their sends
// claimed them -- also for a task that sends, suspends and sends again from another worker.
//
// Gates: `items` counts written values and `space` the room of a bounded channel; every wait is a
// wait on a gate, i.e. through the suspend protocol, and a receiver claims a slot only once
// `items` granted it a value, so the FIFO itself never runs empty under it (it may wait a few
// instructions for the sender of an older slot to finish writing). The gates are SplitGates:
// each side counts on its own cache line (senders release items and take room, receivers the
// other way round), so a steady flow shares only the slots' lines between the two sides. A
// sender thread that finds the channel full spins for a batch of room, not for one value's
// (RoomSpinBatch in ChannelCore.cpp): else, once full, sender and receiver would pass the room
// gate's line back and forth once per value.
//
// Blocks: the sender that claims a block's last slot links the next block; the receivers free a
// block once every slot in it has been read (the last reader of the block does, whichever it is;
// a per-slot bit tells a reader that a slower one is still copying out). Freed blocks go to a
// small pool the senders take from first, so a steady flow allocates nothing; a bounded channel
// fills the pool at construction with every block its capacity can span. It allocates later
// only when blocks stay out of the pool longer than their values: a receiver stalled while
// copying out keeps its block, and slots skipped by sends that threw hold their block until a
// receiver passes them (the pool keeps two spare blocks for that).
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
    // Bounded: call only after `space` granted room. Throws std::bad_alloc when a new block is
    // needed and cannot be had; nothing was claimed then (and granted room is given back).
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

        // acquire, index then block: the block read is at least as new as the index, and a claim
        // of that index succeeds only if the index has not moved since, so the block is its own.
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
