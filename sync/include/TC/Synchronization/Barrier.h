#pragma once
// Barrier: a reusable rendezvous of a fixed number of participants, phase after phase.

#include <TC/Checked.h>
#include <TC/SuspendAsync.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/Synchronization/detail/WaitNode.h>
#include <TC/detail/Export.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>

namespace TC::Synchronization
{
// `participants` callers each ArriveAndWait; the last arrival of a phase completes it, resumes
// the phase's waiters and starts the next. Tasks, converted threads, coroutines, in any mix.
/// - Destruction: once every participant of the last phase returned from ArriveAndWait; the
///   completing arrival does not touch the barrier after resuming the others.
/// - No timed ArriveAndWait (as std::barrier): with a deadline, wait on a Latch per phase.
class TC_API Barrier
{
public:
    explicit Barrier(std::size_t participants) noexcept : participants_(participants) {}
    Barrier(const Barrier&) = delete;
    Barrier& operator=(const Barrier&) = delete;
    ~Barrier()
    {
        TC_CHECK(list_.IsEmpty(), "destroy a primitive only when nobody waits on it",
                 "a Barrier was destroyed with participants waiting on it");
    }

    // Arrives and suspends (task or converted thread) until the phase completes. Returns true
    // for exactly one caller per phase, the one whose arrival completed it (it never suspends).
    bool ArriveAndWait();

    std::size_t Participants() const noexcept { return participants_; }

    class [[nodiscard("co_await it")]] ArriveAwaiter;
    // co_await b.ArriveAndWaitAsync(): yields what ArriveAndWait returns.
    ArriveAwaiter ArriveAndWaitAsync() noexcept;

private:
    class Node final : public detail::WaitNode
    {
    public:
        explicit Node(Barrier& owner) noexcept : owner_(&owner) {}
        void OnSuspended(SuspendedTask handle) noexcept override;
        WaitTarget WaitedOn() const noexcept override { return {owner_, &typeid(Barrier), nullptr}; }
        std::uint64_t phase = 0;

    private:
        Barrier* owner_;
    };

    // Counts the arrival; true if it completed the phase (the others are resumed then).
    bool Arrive(Node& node) noexcept;

    detail::SpinLock lock_;
    detail::WaitList list_;
    std::size_t participants_;
    std::size_t arrived_ = 0;
    std::uint64_t phase_ = 0;
};

class [[nodiscard("co_await it")]] Barrier::ArriveAwaiter
{
public:
    explicit ArriveAwaiter(Barrier & owner) noexcept : owner_(owner), node_(owner), inner_(&node_)
    {
    }
    bool await_ready() noexcept
    {
        return completed_ = owner_.Arrive(node_);
    }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
    {
        return inner_.await_suspend(handle);
    }
    bool await_resume() const noexcept
    {
        return completed_;
    }

private:
    Barrier& owner_;
    Node node_;
    SuspendAwaiter inner_;
    bool completed_ = false;
};

inline Barrier::ArriveAwaiter Barrier::ArriveAndWaitAsync() noexcept
{
    return ArriveAwaiter(*this);
}
} // namespace TC::Synchronization
