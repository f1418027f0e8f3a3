#pragma once
// Every replaceable operator new, from malloc or aligned_alloc, counted in
// TestSupport::allocations while TestSupport::counting is set; every delete frees with std::free
// (MallocDeletes.h). For a test executable that checks what allocates. Defines functions, not
// declarations: include it in exactly one translation unit of the executable.

#include "support/MallocDeletes.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace TestSupport
{
inline std::atomic<bool> counting{false}; // count while set
inline std::atomic<long> allocations{0};  // operator new calls counted

inline void* CountedAllocate(std::size_t size, std::size_t alignment)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    if (size == 0)
        size = 1;
    void* p = alignment > alignof(std::max_align_t)
                  ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                  : std::malloc(size);
    if (!p)
        throw std::bad_alloc();
    return p;
}
} // namespace TestSupport

void* operator new(std::size_t size)
{
    return TestSupport::CountedAllocate(size, 0);
}
void* operator new[](std::size_t size)
{
    return TestSupport::CountedAllocate(size, 0);
}
void* operator new(std::size_t size, std::align_val_t a)
{
    return TestSupport::CountedAllocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a)
{
    return TestSupport::CountedAllocate(size, static_cast<std::size_t>(a));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    try
    {
        return TestSupport::CountedAllocate(size, 0);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    try
    {
        return TestSupport::CountedAllocate(size, 0);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept
{
    try
    {
        return TestSupport::CountedAllocate(size, static_cast<std::size_t>(a));
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept
{
    try
    {
        return TestSupport::CountedAllocate(size, static_cast<std::size_t>(a));
    }
    catch (...)
    {
        return nullptr;
    }
}
