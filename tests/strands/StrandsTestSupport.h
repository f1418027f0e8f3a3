#pragma once
// Test doubles shared by the strands suites: frame sentinels, a hand-driven executor that can
// refuse or drop work, and a stop-aware event that resumes inline.

#include "support/StressScale.h"
#include <TC/Strands.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace TCTest
{
// Counts live coroutine frames by a local placed in each body: a leak reads as a number, not as
// a sanitizer report once in N runs.
struct FrameSentinel
{
    static inline std::atomic<int> live{0};
    FrameSentinel() noexcept { live.fetch_add(1); }
    ~FrameSentinel() { live.fetch_sub(1); }
    FrameSentinel(const FrameSentinel&) = delete;
    FrameSentinel& operator=(const FrameSentinel&) = delete;
};

// An IExecutor stepped by hand. It states itself per resumption, can be told to refuse (throw)
// and can drop everything it holds (abandoning unowned chains), as a shut-down base would.
class ManualExecutor final : public TC::IExecutor
{
public:
    using TC::IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { Submit(TC::ParkedWork{handle, {}}); }
    void Submit(TC::ParkedWork work) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (refuse_)
            throw std::runtime_error("ManualExecutor: refused");
        queue_.push_back(work);
        ++submitted_;
    }
    // Runs one queued item; what it throws propagates to the caller. False if none.
    bool RunOne()
    {
        TC::ParkedWork work;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (queue_.empty())
                return false;
            work = queue_.front();
            queue_.pop_front();
        }
        TC::ExecutorScope scope(this);
        work.handle.resume();
        return true;
    }
    // Takes the oldest queued item without running it.
    TC::ParkedWork TakeOne()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty())
            return {};
        TC::ParkedWork work = queue_.front();
        queue_.pop_front();
        return work;
    }
    std::size_t RunAll()
    {
        std::size_t ran = 0;
        while (RunOne())
            ++ran;
        return ran;
    }
    void DropAll()
    {
        std::deque<TC::ParkedWork> all;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            all.swap(queue_);
        }
        for (auto& work : all)
            work.Abandon();
    }
    void SetRefuse(bool refuse)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        refuse_ = refuse;
    }
    std::size_t Pending() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return queue_.size();
    }
    std::size_t Submitted() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return submitted_;
    }
    void Reserve(std::size_t n)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.resize(n);
        queue_.clear();
    }

private:
    mutable std::mutex mutex_;
    std::deque<TC::ParkedWork> queue_;
    bool refuse_ = false;
    std::size_t submitted_ = 0;
};

// A one-shot event a coroutine parks on. Set() resumes the waiter inline on the setting thread;
// a stop of the waiter's token resumes it inline too (from the stop callback), and the wait
// then throws OperationCancelled -- the runtime-awaitable shape WhenAny is built to survive.
class InlineEvent
{
public:
    class Awaiter
    {
    public:
        explicit Awaiter(InlineEvent& event) : event_(event) {}
        bool await_ready() const noexcept { return event_.set_.load(); }
        template <class Promise>
        bool await_suspend(std::coroutine_handle<Promise> awaiting)
        {
            if constexpr (TC::Strands::HasStopToken<Promise>)
                token_ = awaiting.promise().Token();
            handle_ = awaiting;
            if (token_.stop_requested())
                return false;
            if (token_.stop_possible())
                onStop_.emplace(token_, OnStop{this});
            std::unique_lock<std::mutex> lock(event_.mutex_);
            if (event_.set_.load() || token_.stop_requested())
                return false;
            event_.waiters_.push_back(this);
            return true;
        }
        void await_resume()
        {
            onStop_.reset();
            if (!event_.set_.load() && token_.stop_requested())
                throw TC::Strands::OperationCancelled();
        }

    private:
        friend class InlineEvent;
        struct OnStop
        {
            Awaiter* self;
            void operator()() const noexcept
            {
                if (self->event_.Claim(self))
                    self->handle_.resume();
            }
        };
        InlineEvent& event_;
        TC::Strands::StopToken token_;
        std::coroutine_handle<> handle_;
        std::optional<TC::Strands::StopCallback<OnStop>> onStop_;
    };

    Awaiter Wait() { return Awaiter(*this); }
    void Set()
    {
        std::vector<Awaiter*> waiters;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            set_.store(true);
            waiters.swap(waiters_);
        }
        for (Awaiter* waiter : waiters)
            waiter->handle_.resume();
    }

private:
    bool Claim(Awaiter* waiter)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = waiters_.begin(); it != waiters_.end(); ++it)
            if (*it == waiter)
            {
                waiters_.erase(it);
                return true;
            }
        return false;
    }
    std::mutex mutex_;
    std::atomic<bool> set_{false};
    std::vector<Awaiter*> waiters_;
};

// Ends the process with a message if it is not destroyed within `seconds`: a deadlock fails the
// test with a name instead of hanging ctest until its own timeout.
class Watchdog
{
public:
    explicit Watchdog(const char* what, int seconds = 20)
        : thread_(
              [this, what, seconds]
              {
                  std::unique_lock<std::mutex> lock(mutex_);
                  if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; }))
                  {
                      std::fprintf(stderr, "Watchdog: %s (a deadlock)\n", what);
                      std::fflush(stderr);
                      std::_Exit(1);
                  }
              })
    {
    }
    ~Watchdog()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_; // last: it reads the members above
};

// Stress counts: TC_STRESS_SCALE_DEFAULT percent of them (the build's: 20 under sanitizers,
// else 100); TC_STRESS_SCALE multiplies on top (tests/support/StressScale.h).
inline int Scaled(int count)
{
    double scale = 1.0;
#if defined(TC_STRESS_SCALE_DEFAULT)
    scale = TC_STRESS_SCALE_DEFAULT / 100.0;
#endif
    return TCStress::Scale<int>(count, scale, 1, 2'000'000'000);
}
} // namespace TCTest
