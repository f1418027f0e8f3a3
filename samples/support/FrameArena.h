#pragma once
// FrameArena: a bump allocator over one buffer for a frame's task blocks and coroutine frames,
// emptied once per frame. Copy it into an engine and adapt it.
//   FrameArena arena(1 << 20);
//   scheduler.Start(job, {.allocator = &arena});        // a task block
//   { TC::Strands::FrameAllocatorScope scope(arena); }  // coroutine frames
//   arena.Reset();                                      // at the end of the frame
/// - Allocate: any thread, concurrently (one atomic add); std::bad_alloc once the buffer is spent.
/// - Free: any thread; counts the block back, reclaims nothing.
/// - Reset: when no thread allocates; std::logic_error if a block handed out since the last
///   Reset is still outstanding (a task not joined, a frame not destroyed), keeping them all.
/// - Destroyed with blocks outstanding: prints the count and aborts.

#include <TC/BlockAllocator.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

class FrameArena final : public TC::IBlockAllocator
{
public:
    explicit FrameArena(std::size_t capacity)
        : buffer_(static_cast<unsigned char*>(::operator new(capacity, std::align_val_t(kAlign)))),
          capacity_(capacity)
    {
    }
    ~FrameArena()
    {
        if (const long outstanding = outstanding_.load(std::memory_order_acquire))
        {
            std::fprintf(stderr, "FrameArena destroyed with %ld blocks outstanding\n", outstanding);
            std::abort();
        }
        ::operator delete(buffer_, std::align_val_t(kAlign));
    }
    FrameArena(const FrameArena&) = delete;
    FrameArena& operator=(const FrameArena&) = delete;

    void* Allocate(std::size_t size, std::size_t alignment) override
    {
        // Reserve the worst case of the alignment padding, so one fetch_add suffices.
        const std::size_t reserve = size + (alignment > kAlign ? alignment - kAlign : 0);
        const std::size_t bytes = (reserve + kAlign - 1) / kAlign * kAlign;
        const std::size_t offset = used_.fetch_add(bytes, std::memory_order_relaxed);
        if (offset > capacity_ || bytes > capacity_ - offset)
            throw std::bad_alloc();
        const auto start = reinterpret_cast<std::uintptr_t>(buffer_ + offset);
        const std::uintptr_t aligned = (start + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
        outstanding_.fetch_add(1, std::memory_order_relaxed);
        return reinterpret_cast<void*>(aligned);
    }
    void Free(void*, std::size_t, std::size_t) noexcept override
    {
        outstanding_.fetch_sub(1, std::memory_order_release);
    }

    void Reset()
    {
        if (const long outstanding = outstanding_.load(std::memory_order_acquire))
            throw std::logic_error("FrameArena::Reset: " + std::to_string(outstanding) +
                                   " blocks handed out this frame are still in use");
        used_.store(0, std::memory_order_relaxed);
    }
    // Bytes handed out (with padding) since the last Reset; may exceed the capacity after a
    // refused Allocate.
    std::size_t Used() const noexcept { return used_.load(std::memory_order_relaxed); }
    long Outstanding() const noexcept { return outstanding_.load(std::memory_order_acquire); }
    bool Contains(const void* block) const noexcept
    {
        const auto address = reinterpret_cast<std::uintptr_t>(block);
        const auto begin = reinterpret_cast<std::uintptr_t>(buffer_);
        return address >= begin && address - begin < capacity_;
    }

private:
    static constexpr std::size_t kAlign = 64; // the buffer's, and every block's at least
    unsigned char* buffer_;
    std::size_t capacity_;
    std::atomic<std::size_t> used_{0};
    std::atomic<long> outstanding_{0};
};
