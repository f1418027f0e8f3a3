#pragma once
// The parts ParallelFor and JobGraph split their work into: one word per participant holding
// [begin, end) as offsets (begin in the low half, end in the high one), so the owner's take from
// the front and another participant's take of the back half are each one compare-exchange, and
// every offset is taken once.

#include <atomic>
#include <cstdint>

namespace TC::detail
{
struct alignas(64) SplitPart
{
    std::atomic<std::uint64_t> word{0};
};

constexpr std::uint64_t Pack(std::uint64_t begin, std::uint64_t end) noexcept
{
    return end << 32 | begin;
}
constexpr std::uint64_t BeginOf(std::uint64_t word) noexcept
{
    return word & 0xffff'ffffu;
}
constexpr std::uint64_t EndOf(std::uint64_t word) noexcept
{
    return word >> 32;
}
constexpr std::uint64_t LeftIn(std::uint64_t word) noexcept
{
    return EndOf(word) > BeginOf(word) ? EndOf(word) - BeginOf(word) : 0;
}

// Moves the back half of the largest part but `self`'s into `self`'s (empty) one; false when
// every other part looked empty.
inline bool StealHalf(SplitPart* parts, unsigned count, unsigned self) noexcept
{
    for (;;)
    {
        unsigned victim = count;
        std::uint64_t victimWord = 0;
        std::uint64_t most = 0;
        for (unsigned i = 0; i < count; ++i)
        {
            const std::uint64_t word = parts[i].word.load(std::memory_order_acquire);
            if (i != self && LeftIn(word) > most)
            {
                most = LeftIn(word);
                victim = i;
                victimWord = word;
            }
        }
        if (victim == count)
            return false;
        const std::uint64_t begin = BeginOf(victimWord);
        const std::uint64_t end = EndOf(victimWord);
        const std::uint64_t middle = begin + (end - begin) / 2; // a part of one goes whole
        if (parts[victim].word.compare_exchange_strong(victimWord, Pack(begin, middle),
                                                       std::memory_order_acq_rel,
                                                       std::memory_order_acquire))
        {
            parts[self].word.store(Pack(middle, end), std::memory_order_release);
            return true;
        }
    }
}
} // namespace TC::detail
