#pragma once
// LocalQueue: a worker's own FIFO of runnable items. Only its worker thread touches it, so it
// needs no atomic; it grows by doubling and never shrinks, so a steady state allocates nothing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace TC::detail
{
class LocalQueue
{
public:
    // Room for `capacity` items up front (rounded to a power of two), so a worker's first
    // bursts do not allocate either.
    void Reserve(std::size_t capacity)
    {
        while (capacity_ < capacity)
            Grow();
    }

    bool IsEmpty() const noexcept { return head_ == tail_; }
    std::size_t Size() const noexcept { return tail_ - head_; }

    // Push without growing: false when full (a hot path's fast case, with no call in it).
    bool TryPush(std::uintptr_t item) noexcept
    {
        if (tail_ - head_ == capacity_)
            return false;
        slots_[tail_++ & (capacity_ - 1)] = item;
        return true;
    }

    void Push(std::uintptr_t item)
    {
        if (tail_ - head_ == capacity_)
            Grow();
        slots_[tail_++ & (capacity_ - 1)] = item;
    }

    // Moves the item at `offset` from the front to the front (for seeded, shuffled pumping).
    void SwapToFront(std::size_t offset) noexcept
    {
        std::swap(slots_[head_ & (capacity_ - 1)], slots_[(head_ + offset) & (capacity_ - 1)]);
    }

    std::uintptr_t Front() const noexcept
    {
        return head_ == tail_ ? 0 : slots_[head_ & (capacity_ - 1)];
    }

    std::uintptr_t Pop() noexcept
    {
        if (head_ == tail_)
            return 0;
        return slots_[head_++ & (capacity_ - 1)];
    }

private:
    [[gnu::noinline]] void Grow()
    {
        const std::size_t capacity = capacity_ ? capacity_ * 2 : 64;
        auto slots = std::make_unique<std::uintptr_t[]>(capacity);
        std::size_t count = 0;
        for (std::size_t i = head_; i != tail_; ++i)
            slots[count++] = slots_[i & (capacity_ - 1)];
        slots_ = std::move(slots);
        capacity_ = capacity;
        head_ = 0;
        tail_ = count;
    }

    std::unique_ptr<std::uintptr_t[]> slots_;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
};
} // namespace TC::detail
