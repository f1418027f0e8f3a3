#pragma once
// Task frames: a per-thread cache of freed frames by size class, or the FrameAllocatorScope's
// allocator (strands/src/FrameCache.cpp).

#include <TC/detail/Export.h>

#include <cstddef>

namespace TC::detail
{
TC_API void* AllocateFrame(std::size_t size);
TC_API void FreeFrame(void* frame, std::size_t size) noexcept;
} // namespace TC::detail
