#pragma once
// FaultAllocator: the global operator new of a fault-injection binary counts the allocations of
// the thread that armed it and throws std::bad_alloc at the Nth, so a test can fail every
// allocation of one operation in turn. FaultAllocator.cpp replaces operator new/delete; link it
// into exactly one binary at a time.

#include <TC/StackAllocator.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <new>

namespace Faults
{
// Arms the calling thread: its allocations are counted from zero and the `failAt`th throws
// (0: none fails, only counts). Disarms on destruction. Other threads are never affected.
class Armed
{
public:
    explicit Armed(long failAt = 0) noexcept;
    ~Armed();
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
    // Allocations this thread asked for since arming (the failed one included).
    long Count() const noexcept;
};

// Counts every thread's allocations while open (for "allocates nothing" checks).
class CountAll
{
public:
    CountAll() noexcept;
    ~CountAll();
    CountAll(const CountAll&) = delete;
    CountAll& operator=(const CountAll&) = delete;
    long Count() const noexcept;
};

// Stacks from the default allocator, except that the `failAt`th Allocate since Reset throws
// std::bad_alloc. Counts what it hands out and takes back, so a test can see that no stack leaks.
class FailingStackAllocator final : public TC::IStackAllocator
{
public:
    void Reset(long failAt) noexcept
    {
        calls_.store(0);
        failAt_.store(failAt);
    }
    void* Allocate(std::size_t size, TC::StackGuard guard) override
    {
        const long call = calls_.fetch_add(1) + 1;
        if (call == failAt_.load())
            throw std::bad_alloc();
        void* stack = TC::DefaultStackAllocator().Allocate(size, guard);
        live_.fetch_add(1);
        return stack;
    }
    void Deallocate(void* base, std::size_t size, TC::StackGuard guard) noexcept override
    {
        live_.fetch_sub(1);
        TC::DefaultStackAllocator().Deallocate(base, size, guard);
    }
    long Calls() const noexcept { return calls_.load(); }
    long Live() const noexcept { return live_.load(); }

private:
    std::atomic<long> calls_{0};
    std::atomic<long> failAt_{0};
    std::atomic<long> live_{0};
};

// Runs `attempt(n)` for n = 1, 2, ... with the nth allocation failing, until an attempt
// succeeds without reaching its nth allocation. `attempt` returns the allocation count it saw
// and whether it threw; the result is the number of failure points visited.
template <class Attempt>
long ForEveryAllocation(Attempt attempt)
{
    for (long n = 1;; ++n)
    {
        const auto [count, threw] = attempt(n);
        if (!threw && count < n)
        {
            std::printf("faults: %ld failure points\n", n - 1);
            return n - 1;
        }
        if (n > 100000)
            return -1; // runaway: the caller's REQUIRE on the result fails
    }
}
} // namespace Faults
