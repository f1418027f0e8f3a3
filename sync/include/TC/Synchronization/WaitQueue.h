#pragma once
// WaitQueue: a FIFO of waiters -- tasks, converted threads, coroutines -- with timeouts, stop
// tokens and hand-off, the building block of a primitive that has many waiters.
//
//     std::atomic<int> items{0};  WaitQueue notEmpty;
//     // consumer: take one, or wait until there may be one
//     while (!TakeOne(items))
//         if (notEmpty.Wait([&] { return items.load() == 0; }, 5ms) == WaitStatus::TimedOut)
//             return false;
//     // producer
//     items.fetch_add(1);  notEmpty.ResumeOne();

#include <TC/Checked.h>
#include <TC/Duration.h>
#include <TC/ISuspendCallback.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>
#include <TC/Synchronization/detail/BusyCount.h>
#include <TC/Synchronization/detail/SpinLock.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
// How one wait on a WaitQueue ended.
enum class WaitStatus : std::uint8_t
{
    Resumed,   // ResumeOne/ResumeAll woke it, or its re-check said not to wait: look again
    HandedOff, // a HandOff did its operation for it (and left the result where it asked)
    TimedOut,  // the timeout passed first; the queue keeps nothing of the wait
    Cancelled, // its stop token was stopped first (or already was when it began)
};

class WaitQueue;

namespace detail
{
// One wait on a WaitQueue, in the waiter's own frame (a task's or thread's stack, a coroutine's
// awaiter): it is the wait's ISuspendCallback and its link in the queue. Kernel of the waits;
// users go through WaitQueue.
class TC_API WaitQueueNode final : public ISuspendCallback
{
public:
    using MustWaitFn = bool (*)(void*) noexcept;

    WaitQueueNode(WaitQueue& queue, MustWaitFn mustWait, void* mustWaitArg, void* context,
                  const std::stop_token* stop) noexcept
        : queue_(&queue), mustWait_(mustWait), mustWaitArg_(mustWaitArg), context_(context),
          stop_(stop)
    {
    }
    WaitQueueNode(const WaitQueueNode&) = delete;
    WaitQueueNode& operator=(const WaitQueueNode&) = delete;
    virtual ~WaitQueueNode() = default;

    void OnSuspended(SuspendedTask task) noexcept override;
    bool OnTimeout(SuspendedTask task) noexcept override;
    WaitTarget WaitedOn() const noexcept override;

    // The blocking wait of a task or a converted thread.
    WaitStatus Block(Duration timeout);
    // Around a coroutine's suspension: the stop callback lives exactly as long as the wait.
    void WatchStop() noexcept;
    void UnwatchStop() noexcept { stopWatch_.reset(); }
    WaitStatus Status() const noexcept { return status_; }

private:
    friend class TC::Synchronization::WaitQueue;

    struct OnStop
    {
        WaitQueueNode* node;
        void operator()() const noexcept { node->Cancel(); }
    };
    void Cancel() noexcept;

    WaitQueue* queue_;
    WaitQueueNode* next_ = nullptr;
    WaitQueueNode* prev_ = nullptr;
    SuspendedTask task_;
    MustWaitFn mustWait_;
    void* mustWaitArg_;
    void* context_;
    const std::stop_token* stop_;
    WaitStatus status_ = WaitStatus::Resumed;
    bool linked_ = false; // on the queue's list (under its lock)
    std::optional<std::stop_callback<OnStop>> stopWatch_;
};

template <class F>
bool CallMustWait(void* f) noexcept
{
    return (*static_cast<F*>(f))();
}
} // namespace detail

// A first-in first-out queue of suspended waiters for writing one's own primitive: the
// primitive keeps its state where it likes (atomics, its own lock), waits here while the state
// says wait, and after a change resumes one waiter, all of them, or hands the change to the
// oldest waiter directly. No allocation: each wait's record lives in the waiter's frame.
///
/// The queue's rule (publish, then re-check):
/// - A wait first links its record at the tail, then calls `mustWait()` under the queue's
///   lock; `false` ends the wait at once (Resumed). So a state change made before a ResumeOne,
///   ResumeAll or HandOff begins is either seen by that re-check or finds the waiter queued.
/// - `mustWait` is short and noexcept, never waits, never calls into this queue, and takes no
///   lock that anyone holds around a call to this queue. It may do the operation itself (take
///   the item) and report it through state of its own.
/// - Resumed means "look again": a newcomer may have taken what the resume was for. Loop.
///
/// Memory ordering:
/// - A wait's link and re-check, and ResumeOne/ResumeAll/HandOff's check for waiters, are
///   separated by seq_cst fences: the Dekker pair that lets a resume with nobody queued cost
///   one fence and one load, no lock. The rest is under the queue's lock (acquire/release).
/// - What the resumer wrote before ResumeOne/ResumeAll/HandOff (HandOff's `complete` included)
///   is visible to the waiter it resumes: the kernel's resume synchronizes with the wait's end.
///
/// Lifetime:
/// - Destroy it only when nobody waits on it and no call on it runs or can start (checked mode
///   fails "destroy a primitive only when nobody waits on it" for a queue with waiters).
/// - A call leaves the queue before it resumes anyone and a timed-out or cancelled wait leaves
///   it before it returns, so the creator, or the last waiter, may destroy it right after its
///   own wait returned -- having first called WaitOutResumers() if a resumer that changed the
///   primitive's state may still be on its way to this queue: such a resumer holds
///   ResumerScope() around its state change and its resume.
class TC_API WaitQueue
{
public:
    // `name` (static storage, or outliving the queue) names it in hang reports and DumpTasks;
    // nullptr: "WaitQueue".
    explicit WaitQueue(const char* name = nullptr) noexcept : name_(name) {}
    ~WaitQueue()
    {
        TC_CHECK(waiters_.load(std::memory_order_relaxed) == 0,
                 "destroy a primitive only when nobody waits on it",
                 "a WaitQueue was destroyed with waiters queued on it");
    }
    WaitQueue(const WaitQueue&) = delete;
    WaitQueue& operator=(const WaitQueue&) = delete;

    // Suspends a task or a converted thread while `mustWait()` (re-checked under the queue's
    // rule) holds, until a resume, a hand-off, `timeout` (unlimited without EnableTimers) or a
    // stop of `stop`. `context` is what a HandOff's `complete` receives. Not from a callback,
    // not from a worker thread outside a task (a coroutine uses WaitAsync).
    template <class MustWait>
    WaitStatus Wait(MustWait&& mustWait, Duration timeout = Duration::Infinite(),
                    const std::stop_token& stop = {}, void* context = nullptr)
    {
        using F = std::remove_reference_t<MustWait>;
        static_assert(std::is_nothrow_invocable_r_v<bool, F&>,
                      "WaitQueue: mustWait must be a noexcept callable returning bool");
        if (stop.stop_requested())
            return WaitStatus::Cancelled;
        // F may be const; CallMustWait<F> casts back to it.
        void* mustWaitArg = const_cast<void*>(static_cast<const void*>(std::addressof(mustWait)));
        detail::WaitQueueNode node(*this, &detail::CallMustWait<F>, mustWaitArg, context,
                                   stop.stop_possible() ? &stop : nullptr);
        return node.Block(timeout);
    }

    // co_await queue.WaitAsync(mustWait, ...): the coroutine form of Wait, yielding its
    // WaitStatus. The coroutine continues on the executor that was current when it suspended.
    template <class MustWait>
    class [[nodiscard("co_await it")]] WaitAwaiter
    {
    public:
        WaitAwaiter(WaitQueue & queue, MustWait mustWait, Duration timeout, std::stop_token stop,
                    void* context) noexcept
            : mustWait_(std::move(mustWait)), stop_(std::move(stop)),
              node_(queue, &detail::CallMustWait<MustWait>, &mustWait_, context,
                    stop_.stop_possible() ? &stop_ : nullptr),
              inner_(&node_, timeout)
        {
        }
        WaitAwaiter(const WaitAwaiter&) = delete;
        WaitAwaiter& operator=(const WaitAwaiter&) = delete;

        bool await_ready() const noexcept { return stop_.stop_requested(); }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> handle) noexcept
        {
            node_.WatchStop();
            suspended_ = true;
            return inner_.await_suspend(handle);
        }
        WaitStatus await_resume() noexcept
        {
            if (!suspended_)
                return WaitStatus::Cancelled;
            const bool resumed = inner_.await_resume(); // settles the deadline on every path
            node_.UnwatchStop();
            return resumed ? node_.Status() : WaitStatus::TimedOut;
        }

    private:
        MustWait mustWait_;
        std::stop_token stop_;
        detail::WaitQueueNode node_;
        SuspendForAwaiter inner_;
        bool suspended_ = false;
    };

    template <class MustWait>
    WaitAwaiter<std::decay_t<MustWait>> WaitAsync(MustWait&& mustWait,
                                                  Duration timeout = Duration::Infinite(),
                                                  std::stop_token stop = {},
                                                  void* context = nullptr) noexcept
    {
        static_assert(std::is_nothrow_invocable_r_v<bool, std::decay_t<MustWait>&>,
                      "WaitQueue: mustWait must be a noexcept callable returning bool");
        return WaitAwaiter<std::decay_t<MustWait>>(*this, std::forward<MustWait>(mustWait),
                                                   timeout, std::move(stop), context);
    }

    // Resumes the oldest waiter (Resumed); false if none was queued. Any thread, also a
    // callback; never suspends. With nobody queued: one fence and one load.
    bool ResumeOne() noexcept;

    // Resumes every waiter queued now, oldest first (Resumed); returns how many.
    std::size_t ResumeAll() noexcept;

    // Takes the oldest waiter off the queue, calls `complete(context)` with the context it
    // waited with -- to leave a value there, or to record the operation done on its behalf --
    // and resumes it with HandedOff. False, calling nothing, if none was queued. `complete` runs
    // outside the queue's lock and must not throw.
    template <class Complete>
    bool HandOff(Complete&& complete) noexcept
    {
        static_assert(std::is_nothrow_invocable_v<Complete&, void*>,
                      "WaitQueue::HandOff: complete must be noexcept and take the waiter's void*");
        detail::WaitQueueNode* node = TakeOldest();
        if (!node)
            return false;
        complete(node->context_);
        ResumeTaken(node, WaitStatus::HandedOff);
        return true;
    }

    // True while a waiter is queued, and how many are (snapshots).
    bool HasWaiters() const noexcept { return WaiterCount() != 0; }
    std::size_t WaiterCount() const noexcept { return waiters_.load(std::memory_order_relaxed); }

    // Held by a resumer around a state change and the resume that follows it, when a waiter
    // that sees the change without waiting may destroy the primitive (see Lifetime).
    [[nodiscard]] detail::BusyCount::Scope ResumerScope() noexcept
    {
        return detail::BusyCount::Scope(busy_);
    }

    // Returns once every ResumerScope that began before this call has ended. The creator or
    // last waiter calls it before destroying the primitive; a few instructions when none is open.
    void WaitOutResumers() const noexcept { busy_.Drain(); }

    const char* Name() const noexcept { return name_ ? name_ : "WaitQueue"; }

private:
    friend class detail::WaitQueueNode;

    // Under lock_.
    void PushBack(detail::WaitQueueNode* node) noexcept;
    void Remove(detail::WaitQueueNode* node) noexcept;
    // Fence, look, and if a waiter is queued, unlink the oldest; nullptr if none.
    detail::WaitQueueNode* TakeOldest() noexcept;
    static void ResumeTaken(detail::WaitQueueNode* node, WaitStatus status) noexcept;

    detail::SpinLock lock_;
    detail::WaitQueueNode* head_ = nullptr; // under lock_
    detail::WaitQueueNode* tail_ = nullptr; // under lock_
    std::atomic<std::size_t> waiters_{0};   // written under lock_; read by the lock-free look
    detail::BusyCount busy_;
    const char* name_;
};
} // namespace TC::Synchronization
