#pragma once
// CountingBlockAllocator: an IBlockAllocator over the heap that counts, remembers each live
// block's size and alignment, checks every Free against them, and can be told to throw.

#include <TC/BlockAllocator.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

namespace TestSupport
{
class CountingBlockAllocator final : public TC::IBlockAllocator
{
public:
    ~CountingBlockAllocator()
    {
        for (auto& [block, shape] : live_)
            ::operator delete(block, std::align_val_t(shape.second));
    }

    void* Allocate(std::size_t size, std::size_t alignment) override
    {
        const long attempt = attempts_.fetch_add(1, std::memory_order_relaxed);
        if (attempt == failOn.load(std::memory_order_relaxed))
            throw std::bad_alloc();
        void* block = ::operator new(size, std::align_val_t(alignment));
        {
            std::lock_guard lock(lock_);
            live_.emplace(block, std::pair{size, alignment});
        }
        if (reinterpret_cast<std::uintptr_t>(block) % alignment != 0)
            mismatches_.fetch_add(1);
        lastSize_.store(size, std::memory_order_relaxed);
        lastAlignment_.store(alignment, std::memory_order_relaxed);
        allocations_.fetch_add(1, std::memory_order_release);
        return block;
    }
    void Free(void* block, std::size_t size, std::size_t alignment) noexcept override
    {
        {
            std::lock_guard lock(lock_);
            auto found = live_.find(block);
            if (found == live_.end() || found->second != std::pair{size, alignment})
            {
                mismatches_.fetch_add(1); // not ours, freed twice, or another shape
                return;
            }
            live_.erase(found);
        }
        ::operator delete(block, std::align_val_t(alignment));
        frees_.fetch_add(1, std::memory_order_release);
    }

    long Allocations() const noexcept { return allocations_.load(std::memory_order_acquire); }
    long Frees() const noexcept { return frees_.load(std::memory_order_acquire); }
    long Attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
    long Mismatches() const noexcept { return mismatches_.load(); }
    std::size_t LastSize() const noexcept { return lastSize_.load(std::memory_order_relaxed); }
    std::size_t LastAlignment() const noexcept { return lastAlignment_.load(std::memory_order_relaxed); }
    bool Owns(const void* block)
    {
        std::lock_guard lock(lock_);
        for (auto& [start, shape] : live_)
        {
            auto* begin = static_cast<const unsigned char*>(start);
            if (block >= begin && block < begin + shape.first)
                return true;
        }
        return false;
    }

    // The attempt (0-based) that throws std::bad_alloc; -1: none.
    std::atomic<long> failOn{-1};

private:
    std::mutex lock_;
    std::unordered_map<void*, std::pair<std::size_t, std::size_t>> live_;
    std::atomic<long> attempts_{0};
    std::atomic<long> allocations_{0};
    std::atomic<long> frees_{0};
    std::atomic<long> mismatches_{0};
    std::atomic<std::size_t> lastSize_{0};
    std::atomic<std::size_t> lastAlignment_{0};
};
} // namespace TestSupport
