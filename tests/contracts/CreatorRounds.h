#pragma once
// CreatorRounds: the creator of a multi-waiter primitive destroys it right after its own wait,
// while 16 other waiters -- tasks on a 2-worker scheduler, converted threads and coroutines on
// that scheduler -- were released by the same opening, round after round. The object is freed
// the moment the creator's wait returns, so ASan reports any access that comes later, from a
// waiter resumed before the creator or from a resumer still inside.

#include "support/StressScale.h"

#include <TC/Core.h>
#include <TC/Diagnostics.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#ifndef TC_CONTRACT_SCALE
#define TC_CONTRACT_SCALE 1.0
#endif

namespace TC::Contracts
{
// Rounds: `base` at full size, times the build's factor (smaller under the sanitizers and in
// Debug) times TC_STRESS_SCALE.
inline int Rounds(int base)
{
    return TCStress::Scale<int>(base, TC_CONTRACT_SCALE, 20, 1 << 24);
}

// Spins, yielding, until `done()`; fails the test after 60 s instead of hanging.
template <class Done>
void Await(Done done)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done())
    {
        if (std::chrono::steady_clock::now() > deadline)
        {
            FAIL("a round did not finish within 60 s");
        }
        std::this_thread::yield();
    }
}

// Counts the waiters published so far (the kernel's AfterOnSuspended race point: the waiter's
// OnSuspended, with its re-check, has returned). Only the round's waits suspend while it counts.
inline std::atomic<int> publications{0};
inline void CountPublication(RacePoint point, SuspendedTask) noexcept
{
    if (point == RacePoint::AfterOnSuspended)
        publications.fetch_add(1);
}

// An eager coroutine that frees itself at the end.
struct Fire
{
    struct promise_type
    {
        Fire get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

// How the opening meets the creator's wait.
enum class Opening
{
    // Every waiter, the creator last, is suspended (published) before the opening.
    AllSuspended,
    // The 16 others are suspended; the creator starts its wait as the opening runs, so it may
    // find the object open without suspending, or be resumed by its own re-check.
    CreatorRacing,
};

// Subject: `using Object`; `static void Wait(Object&)`; `static auto Async(Object&)` (what a
// coroutine co_awaits); `static void Open(Object&, int waiters)` (lets all `waiters` pass);
// `static Object* Make()` (called by the creator).
template <class Subject>
class CreatorRounds
{
public:
    static constexpr int kTasks = 6;
    static constexpr int kThreads = 5;
    static constexpr int kCoroutines = 5;
    static constexpr int kOthers = kTasks + kThreads + kCoroutines; // 16

    explicit CreatorRounds(Opening opening) : opening_(opening)
    {
        SetRacePointHook(&CountPublication);
        for (int i = 0; i < kThreads; ++i)
            threads_.emplace_back([this, i] { ThreadLoop(kTasks + i); });
    }

    ~CreatorRounds()
    {
        stop_.store(true);
        round_.fetch_add(1);
        round_.notify_all();
        for (std::thread& thread : threads_)
            thread.join();
        SetRacePointHook(nullptr);
    }

    CreatorRounds(const CreatorRounds&) = delete;
    CreatorRounds& operator=(const CreatorRounds&) = delete;

    // Runs `rounds` rounds and checks that every waiter passed exactly once in each.
    void Run(int rounds)
    {
        for (int r = 0; r < rounds; ++r)
            RunRound();
        for (int i = 0; i < kOthers; ++i)
        {
            INFO("waiter " << i);
            CHECK(passed_[i].load() == rounds);
        }
        CHECK(creatorPassed_.load() == rounds);
    }

private:
    using Object = typename Subject::Object;

    void RunRound()
    {
        publications.store(0);
        finished_.store(0);
        creatorDone_.store(false);
        go_.store(false);
        object_.store(nullptr);
        scheduler_
            .Start(
                [this]
                {
                    Object* object = Subject::Make(); // this task is the creator
                    object_.store(object);
                    if (opening_ == Opening::CreatorRacing)
                        while (!go_.load())
                            std::this_thread::yield();
                    Subject::Wait(*object);
                    creatorPassed_.fetch_add(1);
                    delete object; // at once: every other waiter and resumer must be out
                    creatorDone_.store(true);
                })
            .Detach();
        Await([&] { return object_.load() != nullptr; });
        Object* const object = object_.load();

        for (int i = 0; i < kTasks; ++i)
            scheduler_.Start([this, object, i] { Pass(*object, i); }).Detach();
        round_.fetch_add(1); // the converted threads
        round_.notify_all();
        for (int i = 0; i < kCoroutines; ++i)
            AwaitOnScheduler(*this, object, kTasks + kThreads + i);

        const int published = opening_ == Opening::AllSuspended ? kOthers + 1 : kOthers;
        Await([&] { return publications.load() == published; });
        go_.store(true);
        Subject::Open(*object, kOthers + 1); // the object may be gone once this returns
        Await([&] { return finished_.load() == kOthers && creatorDone_.load(); });
    }

    // One non-creator waiter: waits, then counts -- outside the object -- that it passed.
    void Pass(Object& object, int index)
    {
        Subject::Wait(object);
        passed_[index].fetch_add(1);
        finished_.fetch_add(1);
    }

    static Fire AwaitOnScheduler(CreatorRounds& self, Object* object, int index)
    {
        co_await self.scheduler_.Schedule();
        co_await Subject::Async(*object);
        self.passed_[index].fetch_add(1);
        self.finished_.fetch_add(1);
    }

    void ThreadLoop(int index)
    {
        std::uint64_t seen = 0;
        for (;;)
        {
            round_.wait(seen);
            seen = round_.load();
            if (stop_.load())
                return;
            Pass(*object_.load(), index);
        }
    }

    const Opening opening_;
    Scheduler scheduler_{2u};
    std::vector<std::thread> threads_;
    std::atomic<std::uint64_t> round_{0};
    std::atomic<bool> stop_{false};
    std::atomic<Object*> object_{nullptr};
    std::atomic<bool> go_{false};
    std::atomic<int> finished_{0};
    std::atomic<bool> creatorDone_{false};
    std::atomic<int> creatorPassed_{0};
    std::atomic<int> passed_[kOthers] = {};
};
} // namespace TC::Contracts
