#pragma once
// Channel<T>: a multi-producer multi-consumer queue for tasks, threads and coroutines, unbounded
// or bounded, with Close.
//   TC::Synchronization::Channel<int> channel(64);
//   channel.Send(1);  std::optional<int> value = channel.Receive();  channel.Close();

#include <TC/Duration.h>
#include <TC/Synchronization/detail/ChannelCore.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
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

// Any number of senders and receivers (tasks, converted threads, coroutines); capacity 0 is
// unbounded (Send never waits), else Send suspends while `capacity` values are held.
/// - Receive suspends while empty; after Close it returns what was sent before, then nullopt.
/// - Close resumes waiting senders (Send returns false, value dropped) and receivers of an empty
///   channel; a Send concurrent with Close may still be accepted and received.
/// - One FIFO: each sender's values arrive in order (also across workers); waiters resume in
///   arrival order, but a caller finding a value or room ready may pass them.
/// - Lock-free fast path; threads (and tasks with nothing else queued) spin ~2.5 us before
///   suspending. A steady flow allocates nothing.
/// - A Send whose move or copy throws sends nothing; a receive whose move out throws loses that
///   value. Both propagate the exception.
/// - Destroy it when nobody waits and no call runs; remaining values are destroyed.
template <class T>
class Channel
{
public:
    // Throws std::bad_alloc if the first block (bounded: every block it spans) cannot be had.
    explicit Channel(std::size_t capacity = 0)
        : core_(sizeof(T), alignof(T), capacity,
                std::is_trivially_destructible_v<T> ? nullptr : &DestroyValue)
    {
    }
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    // Sends a value: true if accepted, false if closed. Bounded: suspends while full.
    bool Send(T value)
    {
        if (core_.IsClosed())
            return false;
        if (core_.Bounded() && core_.space.Acquire() != detail::AcquireResult::Acquired)
            return false;
        Emplace(std::move(value));
        return true;
    }

    // Bounded Send limited to `timeout`: Ok, Closed or TimedOut; zero or negative only looks.
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

    // Receives the oldest value, suspending while empty; std::nullopt once closed and drained.
    std::optional<T> Receive()
    {
        if (core_.items.TryAcquire() || core_.items.Acquire() == detail::AcquireResult::Acquired)
            return Extract();
        return std::nullopt;
    }

    // Receive limited to `timeout`: Ok (value in `out`), Closed or TimedOut; zero or negative
    // only looks.
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
        const detail::AcquireResult result = core_.items.TryAcquireOrClosed();
        if (result != detail::AcquireResult::Acquired)
            return result == detail::AcquireResult::Closed ? ChannelStatus::Closed
                                                           : ChannelStatus::Empty;
        out = *Extract();
        return ChannelStatus::Ok;
    }

    // Refuses further sends and resumes every waiter (above). Idempotent; any thread.
    void Close() noexcept { core_.Close(); }
    bool IsClosed() const noexcept { return core_.IsClosed(); }

    // Snapshot of the values held (calls in progress ignored).
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
        detail::SplitGate::AcquireAwaiter inner_;
    };

    // co_await ch.SendAsync(value): true if accepted, false if closed; suspends while full.
    class [[nodiscard("co_await it")]] SendAwaiter
    {
    public:
        // Not noexcept: a throwing move's exception reaches the sender, as Send's does.
        SendAwaiter(Channel & owner, T && value) noexcept(std::is_nothrow_move_constructible_v<T>)
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
        detail::SplitGate::AcquireAwaiter inner_;
        bool closed_ = false;
    };

    ReceiveAwaiter ReceiveAsync() noexcept { return ReceiveAwaiter(*this); }
    SendAwaiter SendAsync(T value) noexcept(std::is_nothrow_move_constructible_v<T>)
    {
        return SendAwaiter(*this, std::move(value));
    }

private:
    static ChannelStatus Map(detail::AcquireResult result) noexcept
    {
        return result == detail::AcquireResult::Closed ? ChannelStatus::Closed
                                                       : ChannelStatus::TimedOut;
    }

    static void DestroyValue(void* value) noexcept { std::launder(static_cast<T*>(value))->~T(); }

    // Room granted or a new block made: construct in place, then publish; a throwing move leaves
    // the slot empty for receivers to step over.
    void Emplace(T&& value)
    {
        const detail::ChannelCore::Slot slot = core_.ClaimForSend();
        try
        {
            ::new (slot.storage) T(std::move(value));
        }
        catch (...)
        {
            core_.Abandon(slot);
            throw;
        }
        core_.Publish(slot);
    }

    // `items` granted a value: move it out and free its slot, also when the move throws.
    std::optional<T> Extract()
    {
        const detail::ChannelCore::Slot slot = core_.ClaimForReceive();
        T* value = std::launder(static_cast<T*>(slot.storage));
        struct Done
        {
            detail::ChannelCore& core;
            const detail::ChannelCore::Slot& slot;
            T* value;
            ~Done()
            {
                value->~T();
                core.Consumed(slot);
            }
        } done{core_, slot, value};
        return std::optional<T>(std::move(*value));
    }

    detail::ChannelCore core_;
};
} // namespace TC::Synchronization
