// The kernel's own stack switch (kernel/src/context), below the scheduler: a fresh context
// starts with its argument and the first message; every switch hands its message to the other
// side; values live in registers across a switch survive it; each side keeps its own
// floating-point control state; SwitchContextThen runs its step on the other side first.

#include "context/Context.h"

#include <TC/StackAllocator.h>

#include <catch2/catch.hpp>

#include <cfenv>
#include <cstdint>

namespace
{
using TC::detail::ExecutionContext;

struct Pair
{
    ExecutionContext thread;
    ExecutionContext fiber;
    void* argumentSeen = nullptr;
    void* firstMessage = nullptr;
    std::uint64_t sum = 0;
    int fiberRounding = -1;
};

class FiberStack
{
public:
    FiberStack() : memory_(TC::DefaultStackAllocator().Allocate(kSize, TC::StackGuard::Page)) {}
    ~FiberStack() { TC::DefaultStackAllocator().Deallocate(memory_, kSize, TC::StackGuard::Page); }
    FiberStack(const FiberStack&) = delete;
    FiberStack& operator=(const FiberStack&) = delete;
    void Make(ExecutionContext& context, TC::detail::ContextEntry entry, void* argument)
    {
        TC::detail::MakeContext(context, memory_, kSize, static_cast<char*>(memory_) + kSize, entry,
                                argument);
    }

private:
    static constexpr std::size_t kSize = TC::StackSize::Medium;
    void* memory_;
};

// A fiber on its own stack, paired with the calling thread; destroyed with the fixture.
struct Fiber
{
    explicit Fiber(TC::detail::ContextEntry entry)
    {
        TC::detail::InitThreadContext(pair.thread);
        stack.Make(pair.fiber, entry, &pair);
    }
    ~Fiber() { TC::detail::DestroyContext(pair.fiber); }
    Fiber(const Fiber&) = delete;
    Fiber& operator=(const Fiber&) = delete;
    FiberStack stack;
    Pair pair;
};

// Counts the messages it is handed, with a running sum held in locals across every switch.
[[noreturn]] void CountingFiber(void* argument, void* message)
{
    TC::detail::OnContextStarted();
    auto* pair = static_cast<Pair*>(argument);
    pair->argumentSeen = argument;
    pair->firstMessage = message;
    std::uint64_t a = 1, b = 2, c = 3, d = 4, e = 5; // kept live across the switches below
    for (std::uint64_t round = 0;; ++round)
    {
        void* next = TC::detail::SwitchContext(pair->fiber, pair->thread,
                                               reinterpret_cast<void*>(round));
        const auto value = reinterpret_cast<std::uint64_t>(next);
        a += value;
        b ^= value * 3;
        c += b;
        d *= 3;
        e = e * 7 + a;
        pair->sum = a + b + c + d + e;
    }
}

[[noreturn]] void RoundingFiber(void* argument, void*)
{
    TC::detail::OnContextStarted();
    auto* pair = static_cast<Pair*>(argument);
    std::fesetround(FE_UPWARD);
    for (;;)
    {
        pair->fiberRounding = std::fegetround();
        TC::detail::SwitchContext(pair->fiber, pair->thread);
    }
}

std::uint64_t Expected(std::uint64_t rounds)
{
    std::uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, sum = 0;
    for (std::uint64_t value = 1; value <= rounds; ++value)
    {
        a += value;
        b ^= value * 3;
        c += b;
        d *= 3;
        e = e * 7 + a;
        sum = a + b + c + d + e;
    }
    return sum;
}
} // namespace

TEST_CASE("A fresh context starts with its argument and the first switch's message")
{
    Fiber fiber(&CountingFiber);
    Pair& pair = fiber.pair;
    int token = 0;
    void* back = TC::detail::SwitchContext(pair.thread, pair.fiber, &token);
    REQUIRE(pair.argumentSeen == &pair);
    REQUIRE(pair.firstMessage == &token);
    REQUIRE(back == reinterpret_cast<void*>(std::uint64_t{0}));
}

TEST_CASE("Messages and live registers survive a hundred thousand switches each way")
{
    Fiber fiber(&CountingFiber);
    Pair& pair = fiber.pair;
    TC::detail::SwitchContext(pair.thread, pair.fiber);
    constexpr std::uint64_t kRounds = 100'000;
    std::uint64_t x = 11, y = 13; // live on this side across each switch
    for (std::uint64_t round = 1; round <= kRounds; ++round)
    {
        void* back = TC::detail::SwitchContext(pair.thread, pair.fiber,
                                               reinterpret_cast<void*>(round));
        REQUIRE(back == reinterpret_cast<void*>(round));
        x = x * 5 + round;
        y ^= x;
    }
    REQUIRE(pair.sum == Expected(kRounds));
    std::uint64_t ex = 11, ey = 13;
    for (std::uint64_t round = 1; round <= kRounds; ++round)
    {
        ex = ex * 5 + round;
        ey ^= ex;
    }
    REQUIRE(x == ex);
    REQUIRE(y == ey);
}

TEST_CASE("Each side keeps its own rounding mode across switches")
{
    Fiber fiber(&RoundingFiber);
    Pair& pair = fiber.pair;
    const int before = std::fegetround();
    for (int round = 0; round < 1000; ++round)
    {
        TC::detail::SwitchContext(pair.thread, pair.fiber);
        REQUIRE(pair.fiberRounding == FE_UPWARD);
        REQUIRE(std::fegetround() == before);
    }
}

#if TC_SWITCH_RUNS_THEN
namespace
{
struct ThenPair
{
    ExecutionContext thread;
    ExecutionContext fiber;
    int stepsRun = 0;
    int stepsSeenByFiber = -1;
};

void CountStep(void* message) noexcept
{
    ++static_cast<ThenPair*>(message)->stepsRun;
}

[[noreturn]] void ThenFiber(void* argument, void*)
{
    TC::detail::OnContextStarted();
    auto* pair = static_cast<ThenPair*>(argument);
    for (;;)
    {
        pair->stepsSeenByFiber = pair->stepsRun;
        TC::detail::SwitchContextThen(pair->fiber, pair->thread, pair, &CountStep);
    }
}
} // namespace

TEST_CASE("SwitchContextThen runs its step on the other side before that side continues")
{
    FiberStack stack;
    ThenPair pair;
    TC::detail::InitThreadContext(pair.thread);
    stack.Make(pair.fiber, &ThenFiber, &pair);
    for (int round = 1; round <= 1000; ++round)
    {
        void* back = TC::detail::SwitchContextThen(pair.thread, pair.fiber, &pair, &CountStep);
        REQUIRE(back == &pair);
        // The step ran on the fiber's side before it read the count, and on this side before
        // SwitchContextThen returned here.
        REQUIRE(pair.stepsSeenByFiber == 2 * round - 1);
        REQUIRE(pair.stepsRun == 2 * round);
    }
    TC::detail::DestroyContext(pair.fiber);
}
#endif
