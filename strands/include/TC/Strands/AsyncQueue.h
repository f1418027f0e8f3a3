#pragma once
// AsyncQueue<T>: a queue any thread pushes to and one coroutine pops from.
//   queue.Push(item);                                 // any thread
//   while (auto item = co_await queue.Pop()) Use(*item); // the one consumer

#include <TC/Checked.h>
#include <TC/Executor.h>
#include <TC/SuspendAsync.h>
#include <TC/Strands/Cancellation.h>
#include <TC/Strands/ResumeTarget.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/detail/ParkedWorkFor.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <typeinfo>
#include <optional>
#include <utility>

namespace TC::Strands
{
// Which end a full queue sacrifices.
enum class Overflow : std::uint8_t
{
    DropOldest, // the oldest item makes room
    DropNewest, // the new item is refused
};

struct AsyncQueueOptions
{
    std::size_t capacity = SIZE_MAX; // at least 1
    Overflow overflow = Overflow::DropOldest;
};

enum class PushOutcome : std::uint8_t
{
    Admitted,
    Refused, // full under DropNewest
    Closed,
};

struct PushResult
{
    PushOutcome outcome = PushOutcome::Admitted;
    std::size_t displaced = 0; // items DropOldest discarded for this one
};

// Push and Close never resume the consumer inline: they hand it to the ResumeTarget current at
// its suspension, or the queue's executor outside every scope. One consumer at a time.
/// - The queue owns no frame: see the consumer finish before destroying it (the destructor
///   checks no waiter is left; HasWaiter() lets a test assert it).
template <class T>
class AsyncQueue
{
public:
    explicit AsyncQueue(IExecutor& executor, AsyncQueueOptions options = {})
        : executor_(executor), options_(options)
    {
        if (options_.capacity == 0)
            options_.capacity = 1;
    }
    ~AsyncQueue()
    {
        TC_CHECK(waiter_ == nullptr, "AsyncQueue destroyed with a waiter",
                 "a coroutine is still parked in Pop()");
    }
    AsyncQueue(const AsyncQueue&) = delete;
    AsyncQueue& operator=(const AsyncQueue&) = delete;

    // Any thread; never blocks on or resumes the consumer inline. A throw queues and displaces
    // nothing.
    PushResult Push(T value)
    {
        PushResult result;
        PopAwaiter* waiter = nullptr;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (closed_)
                return PushResult{PushOutcome::Closed, 0};
            if (items_.size() >= options_.capacity && options_.overflow == Overflow::DropNewest)
                return PushResult{PushOutcome::Refused, 0};
            // In first, then the oldest out, so a throwing push_back loses nothing.
            items_.push_back(std::move(value));
            while (items_.size() > options_.capacity)
            {
                items_.pop_front();
                ++result.displaced;
            }
            waiter = std::exchange(waiter_, nullptr);
        }
        if (waiter)
            waiter->Wake();
        return result;
    }

    // Any thread: hands a parked consumer back; Pop() answers std::nullopt once the items queued
    // before are taken. Idempotent.
    void Close()
    {
        PopAwaiter* waiter = nullptr;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closed_ = true;
            waiter = std::exchange(waiter_, nullptr);
        }
        if (waiter)
            waiter->Wake();
    }

    class PopAwaiter
    {
    public:
        explicit PopAwaiter(AsyncQueue& queue) noexcept : queue_(queue) {}
        PopAwaiter(const PopAwaiter&) = delete;
        PopAwaiter& operator=(const PopAwaiter&) = delete;

        bool await_ready() const
        {
            std::lock_guard<std::mutex> lock(queue_.mutex_);
            return !queue_.items_.empty() || queue_.closed_;
        }

        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> awaiting)
        {
            if constexpr (HasStopToken<Promise>)
                token_ = awaiting.promise().Token();
            if (token_.stop_requested())
                return false; // await_resume answers
            target_ = ResumeTarget::CurrentOr(queue_.executor_);
            work_ = detail::ParkedWorkFor(awaiting);
            // Registered before publication: an earlier stop is seen by the re-check.
            if (token_.stop_possible())
                onStop_.emplace(token_, OnStop{this});
            std::lock_guard<std::mutex> lock(queue_.mutex_);
            if (!queue_.items_.empty() || queue_.closed_ || token_.stop_requested())
                return false;
            TC_CHECK(queue_.waiter_ == nullptr, "AsyncQueue with two consumers",
                     "a second coroutine awaited Pop() while one is parked");
            listing_.List(awaiting, {&queue_, &typeid(AsyncQueue), nullptr});
            queue_.waiter_ = this;
            return true; // from here a push, a close or a stop may resume us anywhere
        }

        // An item already queued and a close both answer before a cancellation.
        std::optional<T> await_resume()
        {
            onStop_.reset(); // waits for a stop callback still running on another thread
            target_ = ResumeTarget();
            std::lock_guard<std::mutex> lock(queue_.mutex_);
            if (!queue_.items_.empty())
            {
                std::optional<T> item(std::move(queue_.items_.front()));
                queue_.items_.pop_front();
                return item;
            }
            if (queue_.closed_)
                return std::nullopt;
            if (token_.stop_requested())
                throw OperationCancelled();
            return std::nullopt;
        }

    private:
        friend class AsyncQueue;

        struct OnStop
        {
            PopAwaiter* self;
            void operator()() const noexcept
            {
                AsyncQueue& queue = self->queue_;
                {
                    std::lock_guard<std::mutex> lock(queue.mutex_);
                    if (queue.waiter_ != self)
                        return; // not parked yet, or a push/close took it
                    queue.waiter_ = nullptr;
                }
                self->Wake();
            }
        };

        // Hands the consumer to its target, never inline; the locals keep the target alive.
        void Wake() noexcept
        {
            ResumeTarget target = std::move(target_);
            ParkedWork work = work_;
            listing_.Unlist();
            try
            {
                target.Submit(work);
            }
            catch (...)
            {
                work.Abandon(); // the executor refused: free an unowned chain rather than leak
            }
        }

        AsyncQueue& queue_;
        StopToken token_;
        ResumeTarget target_;
        ParkedWork work_;
        std::optional<StopCallback<OnStop>> onStop_;
        TC::detail::ParkedListing listing_; // for DumpTasks while parked
    };

    // A value, or std::nullopt once closed and drained; a stop of the flow's token throws
    // OperationCancelled unless an item or close answered first. Resumes where it parked.
    [[nodiscard("co_await it")]] PopAwaiter Pop() noexcept { return PopAwaiter(*this); }

    bool HasWaiter() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return waiter_ != nullptr;
    }
    std::size_t Size() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return items_.size();
    }
    bool Closed() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return closed_;
    }

private:
    IExecutor& executor_;
    AsyncQueueOptions options_;
    mutable std::mutex mutex_;
    std::deque<T> items_;
    PopAwaiter* waiter_ = nullptr;
    bool closed_ = false;
};
} // namespace TC::Strands
