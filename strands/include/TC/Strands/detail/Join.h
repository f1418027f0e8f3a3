#pragma once
// The one runner, join state and awaiter that WhenAll and WhenAny are written over; the mode
// supplies the step that differs -- what a child finishing does to the shared state -- and the
// token each child observes.

#include <TC/Strands/Cancellation.h>
#include <TC/Strands/ParkedWork.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/Task.h>
#include <TC/Strands/detail/UniqueCoroHandle.h>

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace TC::detail
{
enum class JoinMode : std::uint8_t
{
    All, // latches nothing; children observe the awaiting coroutine's token
    Any, // the first child to complete stops the others through a child source
};

enum class ChildOutcome : std::uint8_t
{
    Completed,
    Cancelled, // unwound on OperationCancelled
    Failed,    // anything else escaped
};

inline constexpr std::size_t kNoWinner = std::numeric_limits<std::size_t>::max();
inline constexpr std::size_t kFailedFirst = kNoWinner - 1;

// The race state. Held by shared_ptr: every call into it that can run foreign code (a
// request_stop runs the children's stop callbacks, which may resume and finish them) holds a
// reference, or a copy of the stop source, for that call's duration.
class JoinState
{
public:
    JoinState(JoinMode mode, std::size_t children) noexcept : mode_(mode), remaining_(children + 1)
    {
    }

    // Bridges the awaiting flow's token to the children's source (WhenAny).
    struct Bridge
    {
        StopSource source;
        void operator()() const noexcept
        {
            StopSource keep = source; // the state may die inside request_stop
            keep.request_stop();
        }
    };

    JoinMode mode_;
    // Children still running, plus one held by the starter until every child has started, so
    // the awaiting coroutine cannot be resumed while the starter still touches the awaiter.
    std::atomic<std::size_t> remaining_;
    std::coroutine_handle<> parent_;
    StopSource childSource_{NoStopState};
    std::optional<StopCallback<Bridge>> bridge_;
    // All: the first escape. Any: the failure that settled the race, if one did.
    std::atomic<bool> escapeClaimed_{false};
    std::exception_ptr escape_;
    std::atomic<std::size_t> settled_{kNoWinner}; // Any: winner index, or kFailedFirst

    // One child finished; returns where its final suspension transfers to.
    std::coroutine_handle<> ChildFinished(std::size_t index, ChildOutcome outcome,
                                          std::exception_ptr escape) noexcept
    {
        if (mode_ == JoinMode::All)
        {
            if (outcome != ChildOutcome::Completed)
                ClaimEscape(std::move(escape));
        }
        else if (outcome != ChildOutcome::Cancelled)
        {
            std::size_t expected = kNoWinner;
            const std::size_t mine = outcome == ChildOutcome::Completed ? index : kFailedFirst;
            if (settled_.compare_exchange_strong(expected, mine))
            {
                if (outcome == ChildOutcome::Failed)
                    ClaimEscape(std::move(escape));
                // Our own decrement is still to come, so the losers that unwind inside this
                // request_stop cannot resume the awaiting coroutine; the copy keeps the stop
                // state alive across its own request_stop all the same.
                StopSource keep = childSource_;
                keep.request_stop();
            }
        }
        // acq_rel: the last finisher acquires every child's writes (escape_, settled_) before it
        // resumes the awaiting coroutine, which reads them.
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            return parent_;
        return std::noop_coroutine();
    }

private:
    void ClaimEscape(std::exception_ptr escape) noexcept
    {
        if (!escapeClaimed_.exchange(true, std::memory_order_relaxed)) // ordered by remaining_
            escape_ = std::move(escape);
    }
};

// The coroutine that runs one child between the awaiting coroutine and the child's task. It
// carries the token the child observes and the awaiting flow's unowned root, so a park beneath a
// combinator still knows whether anybody owns its chain.
class JoinRunner
{
public:
    struct promise_type
    {
        struct FinalAwaiter
        {
            bool await_ready() const noexcept { return false; }
            std::coroutine_handle<> await_suspend(
                std::coroutine_handle<promise_type> self) const noexcept
            {
                promise_type& promise = self.promise();
                std::shared_ptr<JoinState> keep = promise.state_;
                return keep->ChildFinished(promise.index_, promise.outcome_,
                                           std::move(promise.escape_));
            }
            void await_resume() const noexcept {}
        };

        JoinRunner get_return_object() noexcept
        {
            return JoinRunner{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() const noexcept { return {}; }
        FinalAwaiter final_suspend() const noexcept { return {}; }
        void return_void() const noexcept {}
        void unhandled_exception() noexcept
        {
            escape_ = std::current_exception();
            try
            {
                std::rethrow_exception(escape_);
            }
            catch (const OperationCancelled&)
            {
                outcome_ = ChildOutcome::Cancelled;
            }
            catch (...)
            {
                outcome_ = ChildOutcome::Failed;
            }
        }

        const StopToken& Token() const noexcept { return token_; }
        std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }

        std::shared_ptr<JoinState> state_;
        std::size_t index_ = 0;
        StopToken token_;
        std::coroutine_handle<> unownedRoot_;
        ChildOutcome outcome_ = ChildOutcome::Completed;
        std::exception_ptr escape_;
    };

    std::coroutine_handle<promise_type> handle;
};

inline JoinRunner RunJoinChild(::TC::Task<void> task)
{
    co_await std::move(task);
}

// Awaited by the coroutine that joins. Owns the children's tasks until they start and the
// runner frames until it is destroyed, so every frame outlives the last child's completion.
template <JoinMode Mode>
class [[nodiscard("co_await it: WhenAll/WhenAny do nothing otherwise")]] JoinAwaiter
{
public:
    explicit JoinAwaiter(std::vector<::TC::Task<void>> tasks) noexcept : tasks_(std::move(tasks)) {}
    JoinAwaiter(JoinAwaiter&&) noexcept = default;

    bool await_ready() const noexcept { return tasks_.empty(); }

    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting)
    {
        const std::size_t count = tasks_.size();
        auto state = std::make_shared<JoinState>(Mode, count);
        state->parent_ = awaiting;
        if constexpr (HasStopToken<Promise>)
            parentToken_ = awaiting.promise().Token();
        const std::coroutine_handle<> root = UnownedRootOf(awaiting);
        runners_.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
        {
            // Allocations may throw here: nothing has started, so the exception leaves the
            // awaiting coroutine at its co_await and the unstarted frames are freed.
            runners_.emplace_back(RunJoinChild(std::move(tasks_[i])).handle);
            auto& promise = runners_.back().GetPromise();
            promise.state_ = state;
            promise.index_ = i;
            promise.unownedRoot_ = root;
        }
        if constexpr (Mode == JoinMode::Any)
        {
            state->childSource_ = StopSource();
            const StopToken childToken = state->childSource_.get_token();
            for (auto& runner : runners_)
                runner.GetPromise().token_ = childToken;
            // Runs inline if the awaiting flow was already cancelled: every child then starts
            // stopped and unwinds at its first stop-aware await.
            state->bridge_.emplace(parentToken_, JoinState::Bridge{state->childSource_});
        }
        else
        {
            for (auto& runner : runners_)
                runner.GetPromise().token_ = parentToken_;
        }
        state_ = state;
        JoinState& join = *state;
        state.reset();
        for (auto& runner : runners_)
            runner.Get().resume();
        // Our own count: the last decrement resumes the awaiting coroutine, ours included (by
        // not suspending). Nothing of `this` is touched after it.
        return join.remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1;
    }

    auto await_resume()
    {
        if constexpr (Mode == JoinMode::All)
        {
            if (state_ && state_->escape_)
                std::rethrow_exception(state_->escape_);
        }
        else
        {
            if (!state_)
                return std::optional<std::size_t>{};
            state_->bridge_.reset();
            const std::size_t settled = state_->settled_.load(std::memory_order_relaxed);
            if (settled == kFailedFirst)
                std::rethrow_exception(state_->escape_);
            if (settled != kNoWinner)
                return std::optional<std::size_t>{settled};
            if (parentToken_.stop_requested())
                throw OperationCancelled();
            return std::optional<std::size_t>{};
        }
    }

private:
    std::vector<::TC::Task<void>> tasks_;
    StopToken parentToken_;
    std::shared_ptr<JoinState> state_;
    std::vector<UniqueCoroHandle<JoinRunner::promise_type>> runners_;
};

template <class... Tasks>
std::vector<::TC::Task<void>> CollectTasks(Tasks&&... tasks)
{
    std::vector<::TC::Task<void>> all;
    all.reserve(sizeof...(Tasks));
    (all.push_back(std::move(tasks)), ...);
    return all;
}
} // namespace TC::detail
