#pragma once
// ChannelCore: the type-erased part of Channel<T> -- the FIFO ring values pass through, slot
// storage for values that do not fit a cell, and the two counting gates.

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace TC::Synchronization::detail
{
// Every value passes through one FIFO ring (a power-of-two ring under a spinlock, held for a
// few stores; ChannelCore.cpp), so values leave in the order their sends queued them -- also for
// a task that sends, suspends and sends again from another worker. A trivially copyable value of
// up to kInlineValueSize bytes (an integer, a pointer, a small struct of them) travels inside a
// ring cell: a send copies it in, a receive copies it out, one ring operation and one gate
// operation per side. Every other value lives in a slot:
//
// Values live in slots owned by the core (raw storage of the element's size and alignment, in
// chunks that never move); the ring carries 32-bit slot indices. A send takes a free index,
// constructs the value in its slot and queues the index; a receive takes the oldest index,
// moves the value out and recycles the index (free indices go through moodycamel's lock-free
// ConcurrentQueue, whose order does not matter there). `items` counts queued values (receivers
// wait on it); `space` counts room in a bounded channel (senders wait on it). The ring never
// blocks: every wait goes through the gates, i.e. through the suspend protocol. An unbounded
// channel grows by chunks of 64, 128, 256 ... slots when no free index is left, and its ring
// doubles when full (an inline ring) or as slots are made (an index ring); that growth, and
// moodycamel's block allocation on a thread's first recycle, are the only allocations after
// construction.
inline constexpr std::size_t kInlineValueSize = 16;

// One ring cell: the bytes of an inline value.
struct InlineCell
{
    alignas(8) std::byte bytes[kInlineValueSize];
};

// True when T's values travel inline in the ring: they fit a cell, and are trivially copyable
// (memcpy is how such a value is copied, and its destructor is trivial, so a value left in the
// ring needs no destroying).
template <class T>
inline constexpr bool kChannelInline = std::is_trivially_copyable_v<T> &&
                                       sizeof(T) <= sizeof(InlineCell) &&
                                       alignof(T) <= alignof(InlineCell);

class ChannelCore
{
public:
    // `inlineValues`: kChannelInline of the element type (then slotSize/slotAlign are unused).
    ChannelCore(std::size_t slotSize, std::size_t slotAlign, std::size_t capacity,
                bool inlineValues);
    ~ChannelCore();
    ChannelCore(const ChannelCore&) = delete;
    ChannelCore& operator=(const ChannelCore&) = delete;

    bool Bounded() const noexcept { return bounded_; }

    // ---- inline values ----
    // Queues a cell holding a value's bytes and wakes a receiver. Bounded: call only after
    // `space` granted room. Throws std::bad_alloc when the queue cannot grow; nothing is queued
    // then (and a bounded channel's granted room is given back).
    void PushInline(const InlineCell& cell);
    // Takes the oldest cell; call only after `items` granted one (then it exists). Wakes a
    // sender of a bounded channel.
    void PopInline(InlineCell& cell) noexcept;

    // ---- values in slots ----

    // A free slot. Bounded: call only after `space` granted one (then it exists). Unbounded:
    // grows when none is left (throws std::bad_alloc if that fails; nothing changes then).
    void* TakeFreeSlot(std::uint32_t& index);
    // Undoes TakeFreeSlot when constructing the value threw.
    void ReturnFreeSlot(std::uint32_t index) noexcept;
    // The value in slot `index` is constructed: queue it and wake a receiver.
    void Commit(std::uint32_t index) noexcept;

    // A full slot; call only after `items` granted one (then it exists).
    void* TakeFullSlot(std::uint32_t& index) noexcept;
    // The value in slot `index` was moved out and destroyed: recycle it and wake a sender.
    void Recycle(std::uint32_t index) noexcept;

    // Closes both gates: waiting senders and receivers resume with Closed; receivers still
    // drain what was sent before.
    void Close() noexcept;
    bool IsClosed() const noexcept { return items.IsClosed(); }

    // For destruction: a full slot without waiting, or nullptr.
    void* TryTakeFullSlotForDestroy(std::uint32_t& index) noexcept;

    SemaphoreCore items{0};
    SemaphoreCore space{0};

private:
    struct Queues;
    void* SlotAddress(std::uint32_t index) const noexcept;

    struct InlineQueue;

    std::unique_ptr<Queues> queues_;      // values in slots
    std::unique_ptr<InlineQueue> inline_; // inline values
    std::size_t slotSize_;
    std::size_t slotAlign_;
    bool bounded_;
};
} // namespace TC::Synchronization::detail
