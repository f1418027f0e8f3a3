#pragma once
// Channel<T>: a multi-producer multi-consumer queue for tasks, threads and coroutines, unbounded
// or bounded, with Close.

#include <TC/Duration.h>
#include <TC/Synchronization/detail/ChannelCore.h>

#include <array>
#include <bit>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
// What a non-blocking or timed channel operation did.
enum class ChannelStatus : std::uint8_t
{
    Ok,
    Closed,   // the channel was closed (and, for a receive, is drained)
    Empty,    // TryReceive: nothing there
    Full,     // TrySend on a bounded channel: no room
    TimedOut, // a timed operation ran out of time
};

// Any number of senders and receivers, each a task, a converted thread or a coroutine. Capacity
// 0 (the default) means unbounded: Send never waits, and the channel grows by chunks. A bounded
// channel holds at most `capacity` values: Send suspends while it is full.
//
// Receive suspends while the channel is empty; after Close it still returns what was sent
// before, then std::nullopt. Close resumes every waiting sender (Send returns false, its value is
// dropped) and every waiting receiver of an empty channel. A Send that runs concurrently with
// Close may still be accepted; it is then received like any other value (or destroyed with the
// channel).
//
// Ordering: one FIFO. Values are received in the order their sends queued them, so the values
// of one sender arrive in the order sent -- also from a task that migrates between workers or a
// coroutine resumed elsewhere -- and values of different senders interleave. Waiters are resumed
// in arrival order.
// Fast path: one ring operation (a spinlock held for a few stores) plus one CAS or fetch_add on
// a counting gate per side; waits go through the suspend protocol. A trivially copyable T of up
// to 16 bytes (detail::kChannelInline) travels inside the ring; any other T lives in a slot of
// the channel and the ring carries its index (moodycamel's lock-free queue recycles free slots).
//
// Destruction: when nobody waits on it and no call is running; remaining values are destroyed.
template <class T>
class Channel
{
public:
    explicit Channel(std::size_t capacity = 0) : core_(sizeof(T), alignof(T), capacity, kInline) {}
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    ~Channel()
    {
        if constexpr (!kInline) // inline values are trivially destructible
        {
            std::uint32_t index;
            while (void* slot = core_.TryTakeFullSlotForDestroy(index))
                std::launder(static_cast<T*>(slot))->~T();
        }
    }

    // Sends a value: true if accepted, false if the channel is closed. A bounded channel
    // suspends the caller (task or converted thread) while it is full.
    bool Send(T value)
    {
        if (core_.IsClosed())
            return false;
        if (core_.Bounded() && core_.space.Acquire() != detail::AcquireResult::Acquired)
            return false;
        Emplace(std::move(value));
        return true;
    }

    // As Send on a bounded channel, but gives up after `timeout`: Ok, Closed or TimedOut.
    ChannelStatus Send(T value, Duration timeout)
    {
        if (core_.IsClosed())
            return ChannelStatus::Closed;
        if (core_.Bounded())
        {
            const detail::AcquireResult result = core_.space.Acquire(timeout);
            if (result != detail::AcquireResult::Acquired)
                return Map(result);
        }
        Emplace(std::move(value));
        return ChannelStatus::Ok;
    }

    // Never suspends: Ok, Closed, or Full (bounded). The value is consumed only on Ok.
    ChannelStatus TrySend(T&& value)
    {
        if (core_.IsClosed())
            return ChannelStatus::Closed;
        if (core_.Bounded() && !core_.space.TryAcquire())
            return ChannelStatus::Full;
        Emplace(std::move(value));
        return ChannelStatus::Ok;
    }
    ChannelStatus TrySend(const T& value) { return TrySend(T(value)); }

    // Receives the oldest value of some sender, suspending (task or converted thread) while the
    // channel is empty; std::nullopt once it is closed and drained.
    std::optional<T> Receive()
    {
        if (core_.items.TryAcquire() || core_.items.Acquire() == detail::AcquireResult::Acquired)
            return Extract();
        return std::nullopt;
    }

    // As Receive, but gives up after `timeout`: Ok (value in `out`), Closed or TimedOut.
    ChannelStatus Receive(T& out, Duration timeout)
    {
        const detail::AcquireResult result = core_.items.TryAcquire()
                                                 ? detail::AcquireResult::Acquired
                                                 : core_.items.Acquire(timeout);
        if (result != detail::AcquireResult::Acquired)
            return Map(result);
        out = *Extract();
        return ChannelStatus::Ok;
    }

    // Never suspends: Ok (value in `out`), Empty or Closed (and drained).
    ChannelStatus TryReceive(T& out)
    {
        if (!core_.items.TryAcquire())
            return core_.IsClosed() ? ChannelStatus::Closed : ChannelStatus::Empty;
        out = *Extract();
        return ChannelStatus::Ok;
    }

    // Refuses further sends and resumes every waiter as described above. Idempotent; any thread.
    void Close() noexcept { core_.Close(); }
    bool IsClosed() const noexcept { return core_.IsClosed(); }

    // A snapshot of the number of values held (ignores sends and receives in progress).
    std::size_t SizeApprox() const noexcept
    {
        const auto n = core_.items.Available();
        return n > 0 ? static_cast<std::size_t>(n) : 0;
    }

    // co_await ch.ReceiveAsync(): yields std::optional<T> (std::nullopt: closed and drained).
    class [[nodiscard("co_await it")]] ReceiveAwaiter
    {
    public:
        explicit ReceiveAwaiter(Channel & owner) noexcept : owner_(owner), inner_(owner.core_.items)
        {
        }
        bool await_ready() noexcept
        {
            return inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        std::optional<T> await_resume()
        {
            if (inner_.await_resume() == detail::AcquireResult::Acquired)
                return owner_.Extract();
            return std::nullopt;
        }

    private:
        Channel& owner_;
        detail::SemaphoreCore::AcquireAwaiter inner_;
    };

    // co_await ch.SendAsync(value): yields true if accepted, false if closed; suspends while a
    // bounded channel is full.
    class [[nodiscard("co_await it")]] SendAwaiter
    {
    public:
        SendAwaiter(Channel & owner, T && value) noexcept
            : owner_(owner), value_(std::move(value)), inner_(owner.core_.space)
        {
        }
        bool await_ready() noexcept
        {
            if (owner_.core_.IsClosed())
                return closed_ = true;
            return !owner_.core_.Bounded() || inner_.await_ready();
        }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            return inner_.await_suspend(handle);
        }
        bool await_resume()
        {
            if (closed_)
                return false;
            if (owner_.core_.Bounded() && inner_.await_resume() != detail::AcquireResult::Acquired)
                return false;
            owner_.Emplace(std::move(value_));
            return true;
        }

    private:
        Channel& owner_;
        T value_;
        detail::SemaphoreCore::AcquireAwaiter inner_;
        bool closed_ = false;
    };

    ReceiveAwaiter ReceiveAsync() noexcept { return ReceiveAwaiter(*this); }
    SendAwaiter SendAsync(T value) noexcept(std::is_nothrow_move_constructible_v<T>)
    {
        return SendAwaiter(*this, std::move(value));
    }

private:
    static constexpr bool kInline = detail::kChannelInline<T>;

    static ChannelStatus Map(detail::AcquireResult result) noexcept
    {
        return result == detail::AcquireResult::Closed ? ChannelStatus::Closed
                                                       : ChannelStatus::TimedOut;
    }

    // A slot is granted (bounded) or available by growth (unbounded): construct and commit.
    void Emplace(T&& value)
    {
        if constexpr (kInline)
        {
            detail::InlineCell cell;
            std::memcpy(cell.bytes, std::addressof(value), sizeof(T)); // trivially copyable
            core_.PushInline(cell);
            return;
        }
        std::uint32_t index;
        void* slot = core_.TakeFreeSlot(index);
        try
        {
            ::new (slot) T(std::move(value));
        }
        catch (...)
        {
            core_.ReturnFreeSlot(index);
            throw;
        }
        core_.Commit(index);
    }

    // `items` granted a value: move it out and recycle its slot.
    std::optional<T> Extract()
    {
        if constexpr (kInline)
        {
            // Trivially copyable: its bytes are its value (bit_cast needs no default
            // constructor).
            detail::InlineCell cell;
            core_.PopInline(cell);
            std::array<std::byte, sizeof(T)> bytes;
            std::memcpy(bytes.data(), cell.bytes, sizeof(T));
            return std::optional<T>(std::bit_cast<T>(bytes));
        }
        std::uint32_t index;
        T* value = std::launder(static_cast<T*>(core_.TakeFullSlot(index)));
        std::optional<T> result(std::move(*value));
        value->~T();
        core_.Recycle(index);
        return result;
    }

    detail::ChannelCore core_;
};
} // namespace TC::Synchronization
