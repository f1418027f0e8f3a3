#pragma once
// BudgetStackAllocator: task stacks within a memory budget, counted.

#include <TC/StackAllocator.h>

#include <atomic>
#include <cstddef>
#include <new>

// [guide:allocator]
// Task stacks come from here: a task takes one when it first runs and gives it back when it
// ends. This one keeps the game's memory budget; an engine would carve from its own arena.
// Allocate may be called from any thread of the scheduler; the scheduler pools released stacks,
// so in steady state neither member runs.
class BudgetStackAllocator final : public TC::IStackAllocator
{
public:
    explicit BudgetStackAllocator(std::size_t budget) : budget_(budget) {}

    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        if (used_.fetch_add(size) + size > budget_)
        {
            used_.fetch_sub(size);
            throw std::bad_alloc(); // that task ends unrun and its Join rethrows this
        }
        ++stacks_;
        return TC::DefaultStackAllocator().Allocate(size, guard); // guard page included
    }

    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
        used_.fetch_sub(size);
        --stacks_;
    }

    std::size_t Used() const noexcept { return used_.load(); }
    int Stacks() const noexcept { return stacks_.load(); }

private:
    const std::size_t budget_;
    std::atomic<std::size_t> used_{0};
    std::atomic<int> stacks_{0};
};
// [/guide:allocator]
