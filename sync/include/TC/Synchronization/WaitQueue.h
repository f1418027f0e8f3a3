#pragma once
// WaitQueue: a FIFO of waiters -- tasks, converted threads, coroutines -- with timeouts, stop
// tokens and hand-off, for primitives with many waiters (guides/many-waiters-with-timeouts.md).
//
//     while (!TakeOne(items))  // consumer
//         if (notEmpty.Wait([&]() noexcept { return items == 0; }, 5ms) == WaitStatus::TimedOut)
//             return false;
//     ++items;  notEmpty.ResumeOne();  // producer

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
// One wait on a WaitQueue, in the waiter's frame: its ISuspendCallback and its link.
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

    WaitStatus Block(Duration timeout); // a task's or a converted thread's wait
    void WatchStop() noexcept;          // the stop callback lives as long as the wait
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

// The waiters of a primitive that keeps its own state: wait here while the state says so;
// after a change resume one waiter, all, or hand the change to the oldest. Never allocates.
/// - A wait links itself at the tail, then calls `mustWait()` under the queue's lock (false:
///   it ends at once, Resumed): a change made before a resume begins is seen there, or the
///   resume finds the waiter. `mustWait` is noexcept and short, never waits or calls this
///   queue, takes no lock held around a call to it. Resumed means "look again".
/// - seq_cst fences part a wait's link from its re-check and a resumer's change from its look
///   (no waiter: a fence and a load). A resumer's earlier writes are visible to the waiter.
/// - Destroy it when nobody waits and no call runs or can start (checked). Calls leave it before
///   resuming, so the creator or last waiter may destroy it once its wait returned -- after
///   WaitOutResumers() if a resumer holding ResumerScope() may still be on its way.
class TC_API WaitQueue
{
public:
    // `name` (outliving the queue) names it in hang reports and DumpTasks; nullptr: "WaitQueue".
    explicit WaitQueue(const char* name = nullptr) noexcept : name_(name) {}
    ~WaitQueue()
    {
        TC_CHECK(waiters_.load(std::memory_order_relaxed) == 0,
                 "destroy a primitive only when nobody waits on it",
                 "a WaitQueue was destroyed with waiters queued on it");
    }
    WaitQueue(const WaitQueue&) = delete;
    WaitQueue& operator=(const WaitQueue&) = delete;

    // Suspends a task or converted thread while `mustWait()` holds, until a resume, a hand-off,
    // `timeout` (no limit without EnableTimers) or `stop`. HandOff's `complete` gets `context`.
    template <class MustWait>
    WaitStatus Wait(MustWait&& mustWait, Duration timeout = Duration::Infinite(),
                    const std::stop_token& stop = {}, void* context = nullptr)
    {
        using F = std::remove_reference_t<MustWait>;
        static_assert(std::is_nothrow_invocable_r_v<bool, F&>,
                      "WaitQueue: mustWait must be a noexcept callable returning bool");
        if (stop.stop_requested())
            return WaitStatus::Cancelled;
        void* mustWaitArg = const_cast<void*>(static_cast<const void*>(std::addressof(mustWait)));
        detail::WaitQueueNode node(*this, &detail::CallMustWait<F>, mustWaitArg, context,
                                   stop.stop_possible() ? &stop : nullptr);
        return node.Block(timeout);
    }

    // co_await queue.WaitAsync(...): Wait for a coroutine; continues where it suspended.
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
            const bool resumed = inner_.await_resume(); // settles the deadline
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

    // Resumes the oldest waiter; false if none. Any thread or callback; never suspends.
    bool ResumeOne() noexcept;

    // Resumes every waiter queued now, oldest first; returns how many.
    std::size_t ResumeAll() noexcept;

    // Takes the oldest waiter, runs `complete(its context)` outside the lock, resumes it
    // HandedOff; false, calling nothing, if none.
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

    // Held around a state change and its resume when a waiter seeing it may destroy the queue.
    [[nodiscard]] detail::BusyCount::Scope ResumerScope() noexcept
    {
        return detail::BusyCount::Scope(busy_);
    }

    // Returns once every ResumerScope begun before it ended; the destroyer calls it first.
    void WaitOutResumers() const noexcept { busy_.Drain(); }

    const char* Name() const noexcept { return name_ ? name_ : "WaitQueue"; }

private:
    friend class detail::WaitQueueNode;

    // Under lock_.
    void PushBack(detail::WaitQueueNode* node) noexcept;
    void Remove(detail::WaitQueueNode* node) noexcept;
    // Fence, look; the oldest waiter unlinked, or nullptr.
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
