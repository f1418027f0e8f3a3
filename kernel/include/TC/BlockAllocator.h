#pragma once
// IBlockAllocator: a source of task blocks (TaskOptions::allocator) and coroutine frames
// (TC::Strands::FrameAllocatorScope).
//   scheduler.Start(job, {.allocator = &arena});

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC
{
/// - Allocate: `size` bytes aligned to `alignment`, or throws; never nullptr.
/// - Free: the same size and alignment. Both from any thread, concurrently.
/// - Outlives every block it handed out.
class TC_API IBlockAllocator
{
public:
    virtual void* Allocate(std::size_t size, std::size_t alignment) = 0;
    virtual void Free(void* block, std::size_t size, std::size_t alignment) noexcept = 0;

protected:
    IBlockAllocator() = default;
    IBlockAllocator(const IBlockAllocator&) = default;
    IBlockAllocator& operator=(const IBlockAllocator&) = default;
    ~IBlockAllocator() = default;
};

// The global heap.
TC_API IBlockAllocator& DefaultBlockAllocator() noexcept;
} // namespace TC
