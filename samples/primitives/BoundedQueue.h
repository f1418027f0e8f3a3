#pragma once
// BoundedQueue<T>: a bounded multi-producer multi-consumer queue whose Push waits while it is
// full and whose Pop waits while it is empty, with timeouts, for tasks, threads and coroutines.
// A sample primitive built on WaitQueue (guides/many-waiters-with-timeouts.md).

#include <TC/WaitForResult.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace Samples
{
// [guide:bounded-queue]
// The ring is lock-free (one CAS per push or pop); the two WaitQueues hold who waits for room
// and who waits for an item. T: default-constructible, nothrow-movable.
template <class T>
class BoundedQueue
{
public:
    explicit BoundedQueue(std::size_t capacity) : mask_(RoundUp(capacity) - 1)
    {
        cells_ = std::make_unique<Cell[]>(mask_ + 1);
        for (std::size_t i = 0; i <= mask_; ++i)
            cells_[i].sequence.store(i, std::memory_order_relaxed);
    }

    // Waits while the queue is full; false if `timeout` passed first.
    bool Push(T value, TC::Duration timeout = TC::Duration::Infinite())
    {
        if (!TC::WaitForResult(notFull_, [&]() noexcept { return TryPush(value); }, timeout))
            return false;
        notEmpty_.ResumeOne(); // a fence and a load when nobody waits
        return true;
    }

    // Waits while the queue is empty; std::nullopt if `timeout` passed first.
    std::optional<T> Pop(TC::Duration timeout = TC::Duration::Infinite())
    {
        auto item = TC::WaitForResult(notEmpty_, [this]() noexcept { return TryPop(); }, timeout);
        if (!item)
            return std::nullopt;
        notFull_.ResumeOne();
        return std::move(*item);
    }

    TC::Strands::Task<bool> PushAsync(T value, TC::Duration timeout = TC::Duration::Infinite())
    {
        if (!co_await TC::WaitForResultAsync(notFull_, [&]() noexcept { return TryPush(value); },
                                             timeout))
            co_return false;
        notEmpty_.ResumeOne();
        co_return true;
    }

    TC::Strands::Task<std::optional<T>> PopAsync(TC::Duration timeout = TC::Duration::Infinite())
    {
        auto item = co_await TC::WaitForResultAsync(
            notEmpty_, [this]() noexcept { return TryPop(); }, timeout);
        if (!item)
            co_return std::nullopt;
        notFull_.ResumeOne();
        co_return std::move(*item);
    }
    // [/guide:bounded-queue]

    // Never waits; the attempts above. Moves `value` in only on success.
    bool TryPush(T& value) noexcept
    {
        std::size_t pos = pushAt_.load(std::memory_order_relaxed);
        for (;;)
        {
            Cell& cell = cells_[pos & mask_];
            // acquire: the pop that freed the cell is done with its value.
            const auto lag = Lag(cell.sequence.load(std::memory_order_acquire), pos);
            if (lag == 0 && pushAt_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed))
            {
                cell.value = std::move(value);
                cell.sequence.store(pos + 1, std::memory_order_release); // publishes the value
                return true;
            }
            if (lag < 0)
                return false; // full: the cell still holds an item from a lap ago
            if (lag > 0)
                pos = pushAt_.load(std::memory_order_relaxed);
        }
    }

    std::optional<T> TryPop() noexcept
    {
        std::size_t pos = popAt_.load(std::memory_order_relaxed);
        for (;;)
        {
            Cell& cell = cells_[pos & mask_];
            // acquire: the push's value.
            const auto lag = Lag(cell.sequence.load(std::memory_order_acquire), pos + 1);
            if (lag == 0 && popAt_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed))
            {
                std::optional<T> item(std::move(cell.value));
                // release: our read of the value is done before a push reuses the cell.
                cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
                return item;
            }
            if (lag < 0)
                return std::nullopt; // empty (or the push into this cell is not published yet)
            if (lag > 0)
                pos = popAt_.load(std::memory_order_relaxed);
        }
    }

private:
    struct Cell
    {
        std::atomic<std::size_t> sequence; // pos: free for push pos; pos + 1: holds its item
        T value{};
    };
    static std::size_t RoundUp(std::size_t n) noexcept
    {
        std::size_t size = 2;
        while (size < n)
            size *= 2;
        return size;
    }
    static std::intptr_t Lag(std::size_t sequence, std::size_t expected) noexcept
    {
        return static_cast<std::intptr_t>(sequence - expected);
    }

    const std::size_t mask_;
    std::unique_ptr<Cell[]> cells_;
    alignas(64) std::atomic<std::size_t> pushAt_{0};
    alignas(64) std::atomic<std::size_t> popAt_{0};
    TC::WaitQueue notFull_{"BoundedQueue: full"};
    TC::WaitQueue notEmpty_{"BoundedQueue: empty"};
};
} // namespace Samples
