#pragma once
// FrameAllocatorScope: Task<T> frames the thread creates come from an allocator.
//   TC::Strands::FrameAllocatorScope scope(frameArena);

#include <TC/BlockAllocator.h>
#include <TC/detail/Export.h>

namespace TC::detail
{
// Sets the thread's frame allocator (nullptr: the cache); returns the previous one.
TC_API IBlockAllocator* ExchangeFrameAllocator(IBlockAllocator* allocator) noexcept;
// Restores `previous`; refuses a scope ended out of order.
TC_API void EndFrameAllocatorScope(IBlockAllocator* allocator, IBlockAllocator* previous) noexcept;
} // namespace TC::detail

namespace TC::Strands
{
/// - While it lives, Task<T> frames this thread creates come from `allocator` (frame + 16
///   bytes, alignment 16).
/// - A frame goes back to its allocator when destroyed, on any thread; never to the cache.
/// - Scopes nest and end in reverse order on their thread, else the process ends naming the
///   rule. In a stackful task, end it before any wait (the thread may change).
class [[nodiscard("a scope directs frames only while it lives")]] FrameAllocatorScope
{
public:
    explicit FrameAllocatorScope(IBlockAllocator& allocator) noexcept
        : allocator_(&allocator), previous_(detail::ExchangeFrameAllocator(&allocator))
    {
    }
    ~FrameAllocatorScope() { detail::EndFrameAllocatorScope(allocator_, previous_); }
    FrameAllocatorScope(const FrameAllocatorScope&) = delete;
    FrameAllocatorScope& operator=(const FrameAllocatorScope&) = delete;

private:
    IBlockAllocator* allocator_;
    IBlockAllocator* previous_;
};
} // namespace TC::Strands
