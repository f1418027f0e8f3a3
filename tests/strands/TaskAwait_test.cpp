// What a co_await in a Task body does with its awaiter and with the task's own state: a task that
// finishes during its start leaves nothing for a handshake (nor does a chain of them), one that
// suspends hands over to its awaiter exactly once while another thread races the start, and any
// awaiter -- one that can be neither moved nor copied included -- is used in place.

#include "StrandsTestSupport.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <coroutine>
#include <stdexcept>
#include <thread>
#include <utility>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;

namespace
{
// ---- tasks that finish during their starts ----

Task<int> Value(int value)
{
    co_return value;
}

Task<int> Chain(int depth)
{
    if (depth == 0)
        co_return 1;
    const int below = co_await Chain(depth - 1);
    co_return below + co_await Value(1);
}

Task<int> Fails()
{
    throw std::runtime_error("failed during its start");
    co_return 0;
}

// ---- the race: a child parks itself where two threads take it ----

// One parked frame at a time, resumed by whichever thread takes it first.
class Slot
{
public:
    void Park(std::coroutine_handle<> frame) noexcept
    {
        parked_.store(frame.address(), std::memory_order_release);
    }
    bool Holds() const noexcept { return parked_.load(std::memory_order_relaxed) != nullptr; }
    // Resumes the parked frame, if there is one; false if there was none.
    bool RunOne()
    {
        void* const frame = parked_.exchange(nullptr, std::memory_order_acquire);
        if (!frame)
            return false;
        std::coroutine_handle<>::from_address(frame).resume();
        return true;
    }

private:
    std::atomic<void*> parked_{nullptr};
};

// Parks the frame, then lingers in the start a little while the other thread may take the frame
// and run it to its end, so that the child often finishes before its awaiter decides.
struct ParkIn
{
    Slot* slot;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> self) const noexcept
    {
        Slot* const into = slot; // this awaiter ends with the frame's resumption: not read after
        into->Park(self);
        for (int spin = 0; spin < kLinger && into->Holds(); ++spin)
        {
        }
    }
    void await_resume() const noexcept {}

    static constexpr int kLinger = 256;
};

struct RaceCounts
{
    long sum = 0;
    // The awaiter went on in its own start while the child finished on the other thread: the
    // child finished first.
    long finishedElsewhereFirst = 0;
    std::atomic<bool> done{false};
};

// Suspends once, then finishes on whichever thread took it, recording that thread.
Task<int> ParkedChild(Slot* slot, int value, std::thread::id* finishedOn)
{
    FrameSentinel sentinel;
    co_await ParkIn{slot};
    *finishedOn = std::this_thread::get_id();
    co_return value;
}

// A level between: marked as suspended by its await of the child only, so its own end takes the
// handshake with the loop exactly when it left the loop suspended.
Task<int> Relay(Slot* slot, int value, std::thread::id* finishedOn)
{
    FrameSentinel sentinel;
    co_return co_await ParkedChild(slot, value, finishedOn);
}

Task<void> RaceParent(Slot* slot, int count, RaceCounts* counts)
{
    FrameSentinel sentinel;
    for (int i = 1; i <= count; ++i)
    {
        std::thread::id finishedOn;
        counts->sum += co_await Relay(slot, i, &finishedOn);
        if (finishedOn != std::this_thread::get_id())
            ++counts->finishedElsewhereFirst;
    }
    counts->done.store(true, std::memory_order_release);
}

long ExpectedSum(long count)
{
    return count * (count + 1) / 2;
}

// ---- awaiters that cannot be moved ----

// Resumed later by the test, after other calls have reused the stack: the awaiter must still be
// the object the body constructed, in the body's frame.
struct Pending
{
    std::coroutine_handle<> frame;
};

class Immovable
{
public:
    static inline int live = 0;
    explicit Immovable(Pending* pending, int value) noexcept : pending_(pending), value_(value)
    {
        ++live;
    }
    Immovable(const Immovable&) = delete;
    Immovable(Immovable&&) = delete;
    Immovable& operator=(const Immovable&) = delete;
    Immovable& operator=(Immovable&&) = delete;
    ~Immovable()
    {
        self_ = nullptr;
        --live;
    }

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> frame) noexcept
    {
        CHECK(self_ == this);
        pending_->frame = frame;
    }
    int await_resume() const
    {
        if (self_ != this)
            throw std::logic_error("the awaiter did not survive its suspension in place");
        return value_;
    }

private:
    const Immovable* self_ = this;
    Pending* pending_;
    int value_;
};

// A prvalue that cannot be moved, returned from a function.
Immovable WaitFor(Pending* pending, int value)
{
    return Immovable(pending, value);
}

// An awaitable whose member operator co_await returns the immovable awaiter.
struct MemberAwaitable
{
    Pending* pending;
    int value;
    Immovable operator co_await() const noexcept { return Immovable(pending, value); }
};

// An awaitable whose non-member operator co_await returns it.
struct FreeAwaitable
{
    Pending* pending;
    int value;
};
Immovable operator co_await(FreeAwaitable awaitable) noexcept
{
    return Immovable(awaitable.pending, awaitable.value);
}

Task<int> AwaitsImmovables(Pending* pending)
{
    int sum = co_await WaitFor(pending, 1);
    sum += co_await Immovable(pending, 10);
    sum += co_await MemberAwaitable{pending, 100};
    sum += co_await FreeAwaitable{pending, 1000};
    Immovable named(pending, 10000);
    sum += co_await named;
    // Two in one expression: both temporaries live to the end of it.
    sum += co_await WaitFor(pending, 100000) + co_await Immovable(pending, 1000000);
    co_return sum;
}

void ReuseTheStack()
{
    volatile unsigned char scratch[8192];
    for (unsigned i = 0; i < sizeof scratch; ++i)
        scratch[i] = static_cast<unsigned char>(i);
}

// await_suspend returning false (went on at once) and returning a frame to transfer to.
struct DeclinesToSuspend
{
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<>) const noexcept { return false; }
    int await_resume() const noexcept { return 3; }
};
struct TransfersBack
{
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> self) const noexcept
    {
        return self;
    }
    int await_resume() const noexcept { return 4; }
};

Task<int> OtherSuspensionForms()
{
    const int declined = co_await DeclinesToSuspend{};
    const int transferred = co_await TransfersBack{};
    co_return declined + transferred;
}

template <class T>
bool MarkedSuspended(const Task<T>& task)
{
    return task.GetHandle().promise().SuspendedOnce();
}
} // namespace

TEST_CASE("A task that finishes during its start hands its value and its failure to the awaiter",
          "[strands][await]")
{
    CHECK(SyncRun(Value(7)) == 7);
    CHECK(SyncRun(Chain(50)) == 51);
    CHECK_THROWS_WITH(SyncRun(Fails()), "failed during its start");
}

TEST_CASE("A chain of tasks that finish during their starts never marks a frame as suspended",
          "[strands][await]")
{
    // Each level's await of a synchronously finishing task leaves the awaiting frame unmarked, so
    // no final suspension in the chain takes the handshake.
    Task<int> root = Chain(20);
    root.GetHandle().resume();
    REQUIRE(root.Done());
    CHECK_FALSE(MarkedSuspended(root));
    CHECK(root.Result() == 21);

    // Any other awaiter marks before its await_suspend runs, even one that declines to suspend.
    Task<int> other = OtherSuspensionForms();
    other.GetHandle().resume();
    REQUIRE(other.Done());
    CHECK(MarkedSuspended(other));
    CHECK(other.Result() == 7);
}

TEST_CASE("An awaiter that suspended marks the awaiting task before the handover",
          "[strands][await]")
{
    Pending pending;
    auto parent = [](Pending* p) -> Task<int> { co_return co_await AwaitsImmovables(p); };
    Task<int> root = parent(&pending);
    root.GetHandle().resume();
    REQUIRE_FALSE(root.Done());
    CHECK(MarkedSuspended(root));
    while (!root.Done())
        std::exchange(pending.frame, nullptr).resume();
    CHECK(root.Result() == 1111111);
}

TEST_CASE("Awaiters that can be neither moved nor copied survive a suspension in place",
          "[strands][await]")
{
    REQUIRE(Immovable::live == 0);
    Pending pending;
    Task<int> task = AwaitsImmovables(&pending);
    task.GetHandle().resume();
    int suspensions = 0;
    while (!task.Done())
    {
        REQUIRE(pending.frame);
        ++suspensions;
        ReuseTheStack();
        std::exchange(pending.frame, nullptr).resume();
    }
    CHECK(suspensions == 7);
    CHECK(task.Result() == 1111111);
    CHECK(Immovable::live == 0);
}

TEST_CASE("A task destroyed while suspended on an immovable awaiter destroys it once",
          "[strands][await]")
{
    REQUIRE(Immovable::live == 0);
    Pending pending;
    {
        Task<int> task = AwaitsImmovables(&pending);
        task.GetHandle().resume();
        std::exchange(pending.frame, nullptr).resume(); // now at the second await
        CHECK(Immovable::live == 1);
    }
    CHECK(Immovable::live == 0);
}

TEST_CASE("A child resumed on another thread while its awaiter decides hands over exactly once",
          "[strands][await]")
{
    REQUIRE(FrameSentinel::live.load() == 0);
    const int count = TCTest::Scaled(1000000);
    Slot slot;
    RaceCounts counts;
    Task<void> root = RaceParent(&slot, count, &counts);
    // Both threads take whatever is parked, so the child often finishes on one while the other
    // is still in the start that suspended it: both sides of the handshake run concurrently.
    auto takeUntilDone = [&]
    {
        while (!counts.done.load(std::memory_order_acquire))
            if (!slot.RunOne())
                std::this_thread::yield();
    };
    std::thread other(takeUntilDone);
    root.GetHandle().resume();
    takeUntilDone();
    other.join();
    REQUIRE(root.Done());
    root = Task<void>();
    INFO("iterations: " << count << ", the child finished elsewhere first: "
                        << counts.finishedElsewhereFirst);
    CHECK(counts.sum == ExpectedSum(count));
    CHECK(FrameSentinel::live.load() == 0);
}
