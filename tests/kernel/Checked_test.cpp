// Checked mode: each broken rule fails at once with a message naming it. This suite links the
// checked build of the kernel in every configuration, so it proves the checks in Release too.

#include "DeathTest.h"
#include "support/Detached.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <coroutine>
#include <stop_token>
#include <string>
#include <thread>

using namespace TC;
using TestSupport::Detached;
using TestSupport::RequireRule;
using TestSupport::RunInChild;

namespace
{
struct Keep final : ISuspendCallback
{
    std::atomic<SuspendedTask> task{nullptr};
    void OnSuspended(SuspendedTask t) noexcept override { task.store(t); }
};

// The handle a Keep received, once it has one.
SuspendedTask AwaitHandle(const Keep& keep)
{
    SuspendedTask handle;
    while (!(handle = keep.task.load()))
        std::this_thread::yield();
    return handle;
}

// A coroutine with no executor that waits on `first`, then on `second`, from the same awaiter
// slot of its frame (the loop's).
Detached WaitTwice(Keep* first, Keep* second)
{
    for (Keep* keep : {first, second})
        co_await SuspendTaskAsync(keep);
}

// Keeps nothing, and takes every waiter back at its deadline: the wait always times out.
struct TakeBack final : ISuspendCallback
{
    void OnSuspended(SuspendedTask) noexcept override {}
    bool OnTimeout(SuspendedTask) noexcept override { return true; }
};
} // namespace

TEST_CASE("The checked kernel reports itself as checked")
{
    REQUIRE(IsCheckedBuild());
}

TEST_CASE("A handle resumed twice fails at once")
{
    auto result = RunInChild([] {
        Scheduler scheduler(0);
        Keep keep;
        auto task = scheduler.Start([&] { SuspendTask(&keep); });
        scheduler.RunPending();
        SuspendedTask handle = keep.task.load();
        ResumeTask(handle);
        ResumeTask(handle);
    });
    RequireRule(result, "handle resumed twice");
    // The message names the primitive's type (the callback the waiter suspended with).
    REQUIRE(result.stderrText.find("(anonymous namespace)::Keep") != std::string::npos);
}

TEST_CASE("A stale handle -- its waiter resumed and suspended again since -- fails at once as "
          "resumed twice")
{
    // A handle kept after its ResumeTask and passed again once its waiter waits anew, on another
    // primitive: that second wait used to end, silently, in every build.
    for (const std::string kind : {"task", "converted thread", "coroutine"})
    {
        CAPTURE(kind);
        auto result = RunInChild([&] {
            alarm(20);
            Keep first, second;
            Scheduler scheduler(1);
            // Both waits from one frame at one depth: a thread's entry lives in the wait's frame,
            // and a last call made as a tail call would put the second one higher up the stack.
            auto waitTwice = [&] {
                for (Keep* keep : {&first, &second})
                    SuspendTask(keep);
                asm volatile("" ::: "memory"); // code after the last wait: no tail call
            };
            std::thread thread;
            if (kind == "task")
                scheduler.Start(waitTwice).Detach();
            else if (kind == "converted thread")
                thread = std::thread(waitTwice);
            else
                WaitTwice(&first, &second);
            const SuspendedTask stale = AwaitHandle(first);
            ResumeTask(stale); // a coroutine runs on at once, to its second wait
            if (AwaitHandle(second).Entry() != stale.Entry())
                _exit(3); // not the case under test: the second wait has an entry of its own
            ResumeTask(stale);
            if (thread.joinable())
                thread.join(); // only a missing check ends the thread's second wait
        });
        INFO("child exit code " << result.exitCode);
        RequireRule(result, "handle resumed twice");
        REQUIRE(result.stderrText.find("a stale handle") != std::string::npos);
        REQUIRE(result.stderrText.find("now on primitive (anonymous namespace)::Keep") !=
                std::string::npos);
    }
}

TEST_CASE("ResumeTask on a handle that is not suspended fails at once")
{
    auto result = RunInChild([] {
        SuspendedTaskEntry entry; // never handed out by OnSuspended
        ResumeTask(SuspendedTask(&entry));
    });
    RequireRule(result, "ResumeTask on a handle that is not suspended");
}

TEST_CASE("A StopScope destroyed before a scope made after it fails at once")
{
    auto result = RunInChild([] {
        std::stop_source outerSource;
        std::stop_source innerSource;
        auto* outer = new TC::StopScope(outerSource.get_token());
        TC::StopScope inner(innerSource.get_token());
        delete outer; // the inner scope still holds the thread's token
    });
    RequireRule(result, "StopScope left on another waiter");
}

TEST_CASE("A StopScope made on a worker outside a task fails at once")
{
    auto result = RunInChild([] {
        Scheduler scheduler(1);
        // A coroutine body on a worker thread (not inside a task).
        struct Runner
        {
            static Detached Go(Scheduler* s)
            {
                co_await s->Schedule();
                std::stop_source source;
                TC::StopScope scope(source.get_token());
            }
        };
        Runner::Go(&scheduler);
        // The abort ends the child long before this (see the wait from a worker above).
        std::this_thread::sleep_for(std::chrono::minutes(1));
    });
    RequireRule(result, "StopScope outside a task");
}

TEST_CASE("A wait inside OnSuspended fails at once")
{
    auto result = RunInChild([] {
        struct Nested final : ISuspendCallback
        {
            void OnSuspended(SuspendedTask) noexcept override
            {
                Keep inner;
                SuspendTask(&inner);
            }
        } nested;
        Scheduler scheduler(1);
        scheduler.Start([&] { SuspendTask(&nested); }).Join();
    });
    RequireRule(result, "wait inside a callback");
}

TEST_CASE("A wait inside OnTimeout fails at once")
{
    auto result = RunInChild([] {
        EnableTimers();
        struct WaitsInTimeout final : ISuspendCallback
        {
            void OnSuspended(SuspendedTask) noexcept override {}
            bool OnTimeout(SuspendedTask) noexcept override
            {
                Keep inner;
                SuspendTask(&inner);
                return true;
            }
        } callback;
        SuspendTaskFor(&callback, std::chrono::milliseconds(1));
    });
    RequireRule(result, "wait inside a callback");
}

TEST_CASE("A blocking wait on a worker thread outside a task fails at once")
{
    auto result = RunInChild([] {
        Scheduler scheduler(1);
        std::atomic<bool> reached{false};
        // Run the coroutine body on a worker thread (not inside a task).
        struct Runner
        {
            static Detached Go(Scheduler* s, std::atomic<bool>* r)
            {
                co_await s->Schedule();
                *r = true;
                Keep keep;
                SuspendTask(&keep);
            }
        };
        Runner::Go(&scheduler, &reached);
        // The abort ends the child long before this; a descheduled worker (TSan, a loaded
        // machine) may take seconds to get there, and only a missing check lets the child exit.
        std::this_thread::sleep_for(std::chrono::minutes(1));
    });
    RequireRule(result, "wait from a place that cannot wait");
}

TEST_CASE("A blocking wait on the timer thread fails at once")
{
    // A coroutine with no executor that a timeout resumes runs on the timer thread; a blocking
    // wait there used to stop every deadline in the process, its own included, for ever.
    auto result = RunInChild(
        []
        {
            EnableTimers();
            struct Runner
            {
                static Detached Go(TakeBack* takeBack)
                {
                    co_await SuspendTaskForAsync(takeBack, std::chrono::milliseconds(1));
                    Keep keep;
                    SuspendTaskFor(&keep, std::chrono::milliseconds(10)); // on the timer thread
                }
            };
            TakeBack takeBack;
            Runner::Go(&takeBack);
            // As above: the abort ends the child; only a missing check lets it wait this out.
            std::this_thread::sleep_for(std::chrono::minutes(1));
        });
    RequireRule(result, "wait from a place that cannot wait");
    REQUIRE(result.stderrText.find("timer thread") != std::string::npos);
}

TEST_CASE("An ExecutorScope held across a suspension fails at once")
{
    auto result = RunInChild([] {
        Scheduler scheduler(1);
        struct Immediate final : ISuspendCallback
        {
            void OnSuspended(SuspendedTask t) noexcept override { ResumeTask(t); }
        } immediate;
        scheduler
            .Start([&] {
                ExecutorScope scope(&scheduler);
                SuspendTask(&immediate);
            })
            .Join();
    });
    RequireRule(result, "ExecutorScope held across a suspension");
}

TEST_CASE("ResumeTask(nullptr) fails at once")
{
    auto result = RunInChild([] { ResumeTask(SuspendedTask(nullptr)); });
    RequireRule(result, "ResumeTask on a null handle");
}

TEST_CASE("A coroutine destroyed during a timed wait fails at once")
{
    // The deadline's node lives in the frame. Before, checked mode only took the entry out of
    // its registry, and the timer thread later fired into the freed frame.
    auto result = RunInChild(
        []
        {
            EnableTimers();
            struct Owned
            {
                struct promise_type
                {
                    Owned get_return_object() noexcept
                    {
                        return {std::coroutine_handle<promise_type>::from_promise(*this)};
                    }
                    std::suspend_never initial_suspend() noexcept { return {}; }
                    std::suspend_always final_suspend() noexcept { return {}; }
                    void return_void() noexcept {}
                    void unhandled_exception() noexcept { std::terminate(); }
                };
                std::coroutine_handle<promise_type> handle;
            };
            struct Runner
            {
                static Owned Go(TakeBack* takeBack)
                {
                    // The deadline is far off: the check fires at destroy, and a timer that
                    // fired first (a descheduled child under TSan) would finish the coroutine
                    // legally and race with the destroy below.
                    (void)co_await SuspendTaskForAsync(takeBack, std::chrono::hours(1));
                }
            };
            TakeBack takeBack;
            Owned owned = Runner::Go(&takeBack); // suspended, its deadline armed
            owned.handle.destroy();
        });
    RequireRule(result, "coroutine destroyed during a timed wait");
}
