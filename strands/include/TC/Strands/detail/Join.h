#pragma once
// The runner, join state and awaiter under WhenAll and WhenAny; the mode decides what a child's
// end does and which token it observes. In an unowned chain a dropped child frees itself alone,
// counts as arrived, and the last arrival frees the awaiting chain once (design notes).

#include <TC/Strands/Cancellation.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/Task.h>
#include <TC/Strands/detail/ParkedWorkFor.h>
#include <TC/Strands/detail/UniqueCoroHandle.h>
#include <TC/detail/Export.h>

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
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

// Frees the root of an awaiting chain a child's abandonment orphaned; a nested call leaves its
// root to the outer loop (constant stack).
TC_API inline void FreeAbandonedRoot(std::coroutine_handle<> root) noexcept
{
    thread_local std::coroutine_handle<>* pending = nullptr;
    if (pending)
    {
        if (*pending)
            root.destroy();
        else
            *pending = root;
        return;
    }
    std::coroutine_handle<> next = root;
    pending = &next;
    while (next)
        std::exchange(next, {}).destroy();
    pending = nullptr;
}

inline constexpr std::size_t kNoWinner = std::numeric_limits<std::size_t>::max();
inline constexpr std::size_t kFailedFirst = kNoWinner - 1;

// The race state (shared_ptr): a call that can run foreign code (request_stop) holds a reference
// or a copy of the stop source meanwhile.
class JoinState
{
public:
    JoinState(JoinMode mode, std::size_t children) noexcept : mode_(mode), remaining_(children + 1)
    {
    }

    // Bridges the awaiting flow's token to the children's source (WhenAny).
    struct Bridge
    {
        Strands::StopSource source;
        void operator()() const noexcept
        {
            Strands::StopSource keep = source; // the state may die inside request_stop
            keep.request_stop();
        }
    };

    JoinMode mode_;
    // Children still running, plus one the starter holds until all started.
    std::atomic<std::size_t> remaining_;
    std::coroutine_handle<> parent_;
    // The awaiting chain's unowned root, or null.
    std::coroutine_handle<> parentRoot_;
    std::atomic<bool> abandoned_{false}; // a child's chain was dropped: the parent never resumes
    Strands::StopSource childSource_{Strands::NoStopState};
    std::optional<Strands::StopCallback<Bridge>> bridge_;
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
                // Our own decrement is still to come: losers cannot resume the awaiter here; the
                // copy keeps the stop state alive.
                Strands::StopSource keep = childSource_;
                keep.request_stop();
            }
        }
        const std::coroutine_handle<> next = Arrive();
        return next ? next : std::noop_coroutine();
    }

    // A child's chain was dropped: WhenAny settles the race and stops the others; WhenAll stops
    // nobody.
    void ChildAbandoned() noexcept
    {
        abandoned_.store(true, std::memory_order_relaxed); // ordered by remaining_
        if (mode_ == JoinMode::Any)
        {
            Strands::StopSource keep = childSource_; // our own arrival is still to come
            keep.request_stop();
        }
        (void)Arrive();
    }

    // Counts one arrival; the last returns the awaiting coroutine, or after an abandonment frees
    // its chain from the root (maybe this state); others and that return null.
    std::coroutine_handle<> Arrive() noexcept
    {
        // acq_rel: the last arrival sees every child's writes.
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1)
            return {};
        if (!abandoned_.load(std::memory_order_relaxed))
            return parent_;
        FreeAbandonedRoot(parentRoot_); // nothing of this state is touched after it
        return {};
    }

private:
    void ClaimEscape(std::exception_ptr escape) noexcept
    {
        if (!escapeClaimed_.exchange(true, std::memory_order_relaxed)) // ordered by remaining_
            escape_ = std::move(escape);
    }
};

// Runs one child with its token; in an unowned chain its unowned root. A ChainFrame, freed by the
// awaiting Task's teardown.
class JoinRunner
{
public:
    struct promise_type : ChainFrame
    {
        struct FinalAwaiter
        {
            bool await_ready() const noexcept { return false; }
            std::coroutine_handle<> await_suspend(
                std::coroutine_handle<promise_type> self) const noexcept
            {
                promise_type& promise = self.promise();
                promise.slot_ = nullptr; // finished: its destruction from here on is its owner's
                std::shared_ptr<JoinState> keep = promise.state_;
                return keep->ChildFinished(promise.index_, promise.outcome_,
                                           std::move(promise.escape_));
            }
            void await_resume() const noexcept {}
        };

        promise_type() noexcept = default;
        promise_type(const promise_type&) = delete;
        promise_type& operator=(const promise_type&) = delete;
        // Destroyed with slot_ set: dropped by an executor; counted, not freed again.
        ~promise_type()
        {
            if (UniqueCoroHandle<promise_type>* slot = std::exchange(slot_, nullptr))
            {
                (void)slot->Release();
                std::shared_ptr<JoinState> keep = state_;
                keep->ChildAbandoned();
            }
        }

        JoinRunner get_return_object() noexcept
        {
            const auto self = std::coroutine_handle<promise_type>::from_promise(*this);
            SetFrame(self);
            return JoinRunner{self};
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
            catch (const Strands::OperationCancelled&)
            {
                outcome_ = ChildOutcome::Cancelled;
            }
            catch (...)
            {
                outcome_ = ChildOutcome::Failed;
            }
        }

        const Strands::StopToken& Token() const noexcept { return token_; }
        std::coroutine_handle<> UnownedRoot() const noexcept { return unownedRoot_; }

        std::shared_ptr<JoinState> state_;
        std::size_t index_ = 0;
        Strands::StopToken token_;
        std::coroutine_handle<> unownedRoot_; // this runner's own frame, or null when owned
        // The awaiter's slot owning this frame, set from start to final suspension in an unowned
        // chain.
        UniqueCoroHandle<promise_type>* slot_ = nullptr;
        ChildOutcome outcome_ = ChildOutcome::Completed;
        std::exception_ptr escape_;
    };

    std::coroutine_handle<promise_type> handle;
};

inline JoinRunner RunJoinChild(::TC::Strands::Task<void> task)
{
    co_await std::move(task);
}

// Awaited by the joining coroutine: owns the children's tasks until they start and the runners
// (but those an abandon freed). An awaiting Task's teardown takes them out (TakeFrame).
template <JoinMode Mode>
class [[nodiscard("co_await it: WhenAll/WhenAny do nothing otherwise")]] JoinAwaiter final
    : public AwaitedFrames
{
public:
    explicit JoinAwaiter(std::vector<::TC::Strands::Task<void>> tasks) noexcept : tasks_(std::move(tasks)) {}
    JoinAwaiter(JoinAwaiter&&) noexcept = default;
    JoinAwaiter(const JoinAwaiter&) = delete;
    JoinAwaiter& operator=(const JoinAwaiter&) = delete;
    JoinAwaiter& operator=(JoinAwaiter&&) = delete;
    ~JoinAwaiter()
    {
        // A runner freed here is freed by its owner, not abandoned: its join is not told.
        for (auto& runner : runners_)
            if (runner)
                runner.GetPromise().slot_ = nullptr;
    }

    bool await_ready() const noexcept { return tasks_.empty(); }

    // For TaskFrame::Reset, in the runners' order; a runner taken here is not abandoned.
    ChainFrame* TakeFrame() noexcept override
    {
        while (taken_ < runners_.size())
        {
            UniqueCoroHandle<JoinRunner::promise_type>& runner = runners_[taken_++];
            if (runner)
            {
                runner.GetPromise().slot_ = nullptr;
                return &runner.Release().promise();
            }
        }
        return nullptr;
    }

    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting)
    {
        const std::size_t count = tasks_.size();
        auto state = std::make_shared<JoinState>(Mode, count);
        state->parent_ = awaiting;
        if constexpr (Strands::HasStopToken<Promise>)
            parentToken_ = awaiting.promise().Token();
        const std::coroutine_handle<> root = UnownedRootOf(awaiting);
        runners_.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
        {
            // May throw: nothing started.
            runners_.emplace_back(RunJoinChild(std::move(tasks_[i])).handle);
            auto& promise = runners_.back().GetPromise();
            promise.state_ = state;
            promise.index_ = i;
        }
        state->parentRoot_ = root;
        if constexpr (Mode == JoinMode::Any)
        {
            state->childSource_ = Strands::StopSource();
            const Strands::StopToken childToken = state->childSource_.get_token();
            for (auto& runner : runners_)
                runner.GetPromise().token_ = childToken;
            // Inline if already cancelled: every child starts stopped.
            state->bridge_.emplace(parentToken_, JoinState::Bridge{state->childSource_});
        }
        else
        {
            for (auto& runner : runners_)
                runner.GetPromise().token_ = parentToken_;
        }
        if (root)
        {
            // Nothing below throws: from here a runner destroyed unfinished was abandoned.
            for (auto& runner : runners_)
            {
                runner.GetPromise().unownedRoot_ = runner.Get();
                runner.GetPromise().slot_ = &runner;
            }
        }
        state_ = state;
        JoinState& join = *state;
        state.reset();
        // Before any child starts: the awaiter may resume on the last finisher's thread.
        if constexpr (std::is_base_of_v<ChainFrame, Promise>)
        {
            awaiting_ = &awaiting.promise();
            awaiting_->SuspendedOnFrames(*this);
        }
        // By handle: a child abandoned while starting releases its slot under this loop.
        for (std::size_t i = 0; i < count; ++i)
        {
            const auto handle = runners_[i].Get();
            // Each start nests until the child suspends or finishes: counted as a Task start.
            [[maybe_unused]] const NestedStart nested;
            handle.resume();
        }
        // Our own arrival: the last resumes the awaiter (by not suspending) or frees its chain.
        // Nothing of `this` is touched after it.
        return !join.Arrive();
    }

    auto await_resume()
    {
        if (awaiting_)
            std::exchange(awaiting_, nullptr)->ResumedOnFrames();
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
                throw Strands::OperationCancelled();
            return std::optional<std::size_t>{};
        }
    }

private:
    std::vector<::TC::Strands::Task<void>> tasks_;
    Strands::StopToken parentToken_;
    std::shared_ptr<JoinState> state_;
    std::vector<UniqueCoroHandle<JoinRunner::promise_type>> runners_;
    // The awaiting frame this awaiter is linked to for teardown while suspended, or null.
    ChainFrame* awaiting_ = nullptr;
    std::size_t taken_ = 0; // runners_ before this one were taken by TakeFrame
};

template <class... Tasks>
std::vector<::TC::Strands::Task<void>> CollectTasks(Tasks&&... tasks)
{
    std::vector<::TC::Strands::Task<void>> all;
    all.reserve(sizeof...(Tasks));
    (all.push_back(std::move(tasks)), ...);
    return all;
}
} // namespace TC::detail
