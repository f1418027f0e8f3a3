#pragma once
// CountingStackAllocator: the default stack allocator, counting the stacks it hands out and
// takes back, for tests of how many stacks a scheduler really uses.

#include <TC/Core.h>

#include <atomic>

namespace TestSupport
{
struct CountingStackAllocator final : TC::IStackAllocator
{
    std::atomic<int> allocated{0};
    std::atomic<int> released{0};
    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        ++allocated;
        return TC::DefaultStackAllocator().Allocate(size, guard);
    }
    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        ++released;
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
    }
};
} // namespace TestSupport
