// The replaced global operator new/delete behind Faults::Armed and Faults::CountAll.
// Only the armed thread counts and fails, so Catch2's and the workers' allocations never do.

#include "FaultAllocator.h"

#include <cstdlib>

#include "support/MallocDeletes.h"

namespace
{
thread_local bool tArmed = false;
thread_local long tCount = 0;
thread_local long tFailAt = 0;
// relaxed: a plain event counter; the test reads it after joining what it counted.
std::atomic<bool> gCounting{false};
std::atomic<long> gCount{0};

void* Allocate(std::size_t size, std::size_t alignment)
{
    if (gCounting.load(std::memory_order_relaxed))
        gCount.fetch_add(1, std::memory_order_relaxed);
    if (tArmed)
    {
        ++tCount;
        if (tCount == tFailAt)
            throw std::bad_alloc();
    }
    void* p = nullptr;
    if (alignment <= alignof(std::max_align_t))
        p = std::malloc(size ? size : 1);
    else if (posix_memalign(&p, alignment, size ? size : 1) != 0)
        p = nullptr;
    if (!p)
        throw std::bad_alloc();
    return p;
}

void* AllocateNoThrow(std::size_t size, std::size_t alignment) noexcept
{
    try
    {
        return Allocate(size, alignment);
    }
    catch (...)
    {
        return nullptr;
    }
}
} // namespace

namespace Faults
{
Armed::Armed(long failAt) noexcept
{
    tCount = 0;
    tFailAt = failAt;
    tArmed = true;
}
Armed::~Armed()
{
    tArmed = false;
}
long Armed::Count() const noexcept
{
    return tCount;
}

CountAll::CountAll() noexcept
{
    gCount.store(0);
    gCounting.store(true);
}
CountAll::~CountAll()
{
    gCounting.store(false);
}
long CountAll::Count() const noexcept
{
    return gCount.load();
}
} // namespace Faults

void* operator new(std::size_t size)
{
    return Allocate(size, 0);
}
void* operator new[](std::size_t size)
{
    return Allocate(size, 0);
}
void* operator new(std::size_t size, std::align_val_t al)
{
    return Allocate(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al)
{
    return Allocate(size, static_cast<std::size_t>(al));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return AllocateNoThrow(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return AllocateNoThrow(size, 0);
}
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept
{
    return AllocateNoThrow(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept
{
    return AllocateNoThrow(size, static_cast<std::size_t>(al));
}
// Every operator delete frees with std::free (support/MallocDeletes.h, included above).
