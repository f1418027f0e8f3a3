#pragma once
// ChannelCore: the type-erased part of Channel<T> -- slot storage, the lock-free index queues
// (moodycamel ConcurrentQueue, kept inside ChannelCore.cpp) and the two counting gates.

#include <TC/Synchronization/detail/SemaphoreCore.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace TC::Synchronization::detail
{
// Values live in slots owned by the core (raw storage of the element's size and alignment, in
// chunks that never move); the queues carry 32-bit slot indices. A send takes a free index,
// constructs the value in its slot and queues the index as full; a receive takes a full index,
// moves the value out and queues the index as free. `items` counts full slots (receivers wait on
// it); `space` counts free slots of a bounded channel (senders wait on it). The index queues
// never block: every wait goes through the gates, i.e. through the suspend protocol.
// An unbounded channel grows by chunks of 64, 128, 256 ... slots when no free index is left;
// that growth (and moodycamel's own block allocation on a thread's first use) is the only
// allocation after construction.
class ChannelCore
{
public:
    ChannelCore(std::size_t slotSize, std::size_t slotAlign, std::size_t capacity);
    ~ChannelCore();
    ChannelCore(const ChannelCore&) = delete;
    ChannelCore& operator=(const ChannelCore&) = delete;

    bool Bounded() const noexcept { return bounded_; }

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

    std::unique_ptr<Queues> queues_;
    std::size_t slotSize_;
    std::size_t slotAlign_;
    bool bounded_;
};
} // namespace TC::Synchronization::detail
