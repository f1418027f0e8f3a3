#pragma once
// Channel<T>: a multi-producer multi-consumer queue for tasks, threads and coroutines, unbounded
// or bounded, with Close.

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
// coroutine resumed elsewhere -- and values of different senders interleave. Queued waiters are
// resumed in arrival order; a caller that finds a value (or room) ready may pass before them.
// Fast path, lock-free: a send is one compare-exchange to claim a slot, the value constructed in
// place, one store to publish it and one fetch_add on the values' gate; a receive is one CAS on
// that gate, one compare-exchange to claim the oldest slot, the move out and one fetch_or to
// free the slot; a bounded channel adds a CAS on the room gate to a send and a fetch_add to a
// receive. Each gate counts each side on its own cache line (detail/SplitGate.h), so the two
// sides share only the slots' lines. Waits go through the suspend protocol; a converted thread
// spins up to about 2.5 us for a value or room before it suspends (for room, it waits during
// the spin for a quarter of the capacity, at most 64, and takes what there is when the spin
// ends: fewer crossings of the room gate's line), and so does a task while nothing else is
// queued for its worker; a coroutine, a task with work queued beside it or on a host-pumped
// scheduler, and a thread whose waits pump a scheduler do not spin
// (TC::SpinBeforeWaitHoldsNothingUp). Values live in blocks of 31 slots; freed
// blocks are kept for reuse, so a steady flow allocates nothing, and a bounded channel allocates
// every block it can span when it is constructed (afterwards only when a stalled receiver or the
// slots of throwing sends keep blocks out of use, detail/ChannelCore.h).
//
// A Send whose move or copy into the channel throws sends nothing: the exception propagates and
// the channel is as if the Send had not happened. A receive whose move out of the channel throws
// loses that value (it is destroyed) and propagates the exception.
//
// Destruction: when nobody waits on it and no call is running; remaining values are destroyed.
template <class T>
class Channel
{
public:
    // Throws std::bad_alloc when the channel's first block (and, bounded, every block it can
    // span) cannot be allocated.
    explicit Channel(std::size_t capacity = 0)
        : core_(sizeof(T), alignof(T), capacity,
                std::is_trivially_destructible_v<T> ? nullptr : &DestroyValue)
    {
    }
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

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

    // As Send on a bounded channel, but gives up after `timeout`: Ok, Closed or TimedOut. A zero
    // or negative timeout only looks for room, and never waits (with timers enabled or not).
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

    // As Receive, but gives up after `timeout`: Ok (value in `out`), Closed or TimedOut. A zero
    // or negative timeout only looks for a value, and never waits (with timers enabled or not).
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
        detail::SplitGate::AcquireAwaiter inner_;
    };

    // co_await ch.SendAsync(value): yields true if accepted, false if closed; suspends while a
    // bounded channel is full.
    class [[nodiscard("co_await it")]] SendAwaiter
    {
    public:
        // Not noexcept for a throwing move: the exception must reach the sender, as Send's does.
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

    // Room is granted (bounded) or made by a new block (unbounded): construct in place, then
    // publish. A throwing move leaves the slot marked empty for receivers to step over.
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
