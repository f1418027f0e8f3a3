// Coroutine hooks: a scheduler calls coroutineEnter/coroutineLeave in matched pairs on the thread
// that resumes a coroutine -- on its workers, in a host's pump, and for a strand running on it --
// with the chain's id and name, and no coroutine body runs outside its zone. Task and chain ids
// are never reused; a throwing coroutine hook ends the process naming it.

#include "DeathTest.h"
#include "StrandsTestSupport.h"

#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Strands/ResumeOn.h>
#include <TC/Strands/Strand.h>
#include <TC/Strands/Task.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using TC::Scheduler;
using TC::SchedulerOptions;
using TC::Strands::Task;

namespace
{
constexpr const char* kRootName = "root";

thread_local std::uint64_t tlsChain = 0; // the zone entered on this thread, 0: none

// Read afresh after a resumption, which may have moved the coroutine to another thread.
[[gnu::noinline]] std::uint64_t CurrentChain()
{
    asm volatile("" ::: "memory");
    return tlsChain;
}

struct ZoneLog
{
    std::atomic<long> enters{0};
    std::atomic<long> leaves{0};
    std::atomic<int> mismatches{0}; // enter inside an entered zone, or leave of another chain
    std::atomic<int> outside{0};    // a body step that found itself outside its chain's zone
    std::mutex lock;
    std::set<std::uint64_t> chains;
    std::set<std::string> names;

    void Body(std::uint64_t chain)
    {
        if (CurrentChain() != chain)
            ++outside;
    }
};

void AddHooks(SchedulerOptions& options, ZoneLog& log)
{
    options.hooks.coroutineEnter = [&log](std::uint64_t chain, const char* name)
    {
        if (tlsChain != 0 || chain == 0 || name == nullptr)
            ++log.mismatches;
        tlsChain = chain;
        ++log.enters;
        std::lock_guard guard(log.lock);
        log.chains.insert(chain);
        log.names.insert(name ? name : "");
    };
    options.hooks.coroutineLeave = [&log](std::uint64_t chain, const char*)
    {
        if (tlsChain != chain)
            ++log.mismatches;
        tlsChain = 0;
        ++log.leaves;
    };
}

Task<void> Child(Scheduler& scheduler, const std::uint64_t& chain, ZoneLog& log)
{
    co_await scheduler.Schedule();
    log.Body(chain);
}

// Five resumptions by `scheduler`: its start, three Schedule()s, and its child's Schedule().
Task<void> Root(Scheduler& scheduler, const std::uint64_t& chain, ZoneLog& log, std::atomic<int>& done)
{
    log.Body(chain);
    for (int i = 0; i < 3; ++i)
    {
        co_await scheduler.Schedule();
        log.Body(chain);
    }
    co_await Child(scheduler, chain, log);
    log.Body(chain);
    ++done;
}

// Starts `count` roots on `scheduler` (pumping it when it has no workers), then stops it.
void RunRoots(Scheduler& scheduler, ZoneLog& log, int count)
{
    std::atomic<int> done{0};
    std::vector<std::uint64_t> chains(count);
    std::vector<Task<void>> roots;
    for (int i = 0; i < count; ++i)
    {
        roots.push_back(Root(scheduler, chains[i], log, done));
        roots.back().SetName(kRootName);
        chains[i] = roots.back().ChainId();
    }
    for (auto& root : roots)
        scheduler.Submit(root.GetHandle());
    while (done.load() != count)
    {
        if (scheduler.WorkerCount() == 0)
            scheduler.RunUntilIdle();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    scheduler.Stop();
    std::set<std::uint64_t> distinct(chains.begin(), chains.end());
    CHECK(distinct.size() == static_cast<std::size_t>(count));
    CHECK(std::find(chains.begin(), chains.end(), 0) == chains.end());
    std::lock_guard guard(log.lock);
    CHECK(log.chains == distinct); // children took their root's id
}
} // namespace

TEST_CASE("coroutine hooks pair on the resuming thread, workers and host pump", "[coroutinehooks]")
{
    for (unsigned workers : {0u, 1u, 2u})
    {
        INFO(workers << " workers");
        ZoneLog log;
        SchedulerOptions options;
        options.workerCount = workers;
        AddHooks(options, log);
        const int count = 200;
        {
            Scheduler scheduler(options);
            RunRoots(scheduler, log, count);
        }
        CHECK(log.enters.load() == 5L * count);
        CHECK(log.leaves.load() == log.enters.load());
        CHECK(log.mismatches.load() == 0);
        CHECK(log.outside.load() == 0);
        CHECK(log.names == std::set<std::string>{kRootName});
    }
}

namespace
{
Task<void> OnStrand(TC::Strands::Strand& strand, const std::uint64_t& chain, ZoneLog& log,
                    std::atomic<int>& done)
{
    for (int i = 0; i < 4; ++i)
    {
        co_await TC::Strands::ResumeOn{strand};
        log.Body(chain);
    }
    ++done;
}

TC::Strands::DetachedTask Anonymous(Scheduler& scheduler, ZoneLog& log, std::atomic<int>& done)
{
    co_await scheduler.Schedule();
    if (CurrentChain() == 0)
        ++log.outside;
    ++done;
}
} // namespace

TEST_CASE("coroutine hooks pair around each resumption a strand runs on a scheduler",
          "[coroutinehooks]")
{
    ZoneLog log;
    SchedulerOptions options;
    options.workerCount = 2;
    AddHooks(options, log);
    const int count = 100;
    std::atomic<int> done{0};
    std::vector<std::uint64_t> chains(count);
    std::vector<Task<void>> tasks;
    {
        Scheduler scheduler(options);
        {
            TC::Strands::Strand strand(scheduler);
            for (int i = 0; i < count; ++i)
            {
                tasks.push_back(OnStrand(strand, chains[i], log, done));
                chains[i] = tasks.back().ChainId();
            }
            for (auto& task : tasks)
                scheduler.Submit(task.GetHandle());
            while (done.load() != count)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            scheduler.Stop();
        }
    }
    // Each: its start on the scheduler, four resumptions on the strand (each its own zone).
    CHECK(log.enters.load() == 5L * count);
    CHECK(log.leaves.load() == log.enters.load());
    CHECK(log.mismatches.load() == 0);
    CHECK(log.outside.load() == 0);
    CHECK(log.names == std::set<std::string>{"coroutine"});
    std::lock_guard guard(log.lock);
    CHECK(log.chains == std::set<std::uint64_t>(chains.begin(), chains.end()));
}

TEST_CASE("a coroutine of no Task chain gets a zone of its own, named coroutine",
          "[coroutinehooks]")
{
    ZoneLog log;
    SchedulerOptions options;
    AddHooks(options, log);
    std::atomic<int> done{0};
    {
        Scheduler scheduler(options);
        for (int i = 0; i < 10; ++i)
            Anonymous(scheduler, log, done);
        scheduler.RunUntilIdle();
    }
    CHECK(done.load() == 10);
    CHECK(log.enters.load() == 10);
    CHECK(log.leaves.load() == 10);
    CHECK(log.outside.load() == 0);
    CHECK(log.chains.size() == 10);
    CHECK(log.names == std::set<std::string>{"coroutine"});
}

TEST_CASE("task and chain ids are never reused", "[coroutinehooks]")
{
#if defined(TC_STRESS_SCALE_DEFAULT) || !defined(NDEBUG)
    const int base = 100'000; // Debug and sanitizers a tenth (and the sanitizers' scale on top)
#else
    const int base = 1'000'000;
#endif
    const int count = TCTest::Scaled(base);
    std::mutex lock;
    std::vector<std::uint64_t> ids;
    ids.reserve(static_cast<std::size_t>(count) * 2);
    SchedulerOptions options;
    options.workerCount = 2;
    options.hooks.taskEnter = [&](TC::TaskHandle task, const char*)
    {
        std::lock_guard guard(lock);
        ids.push_back(task.Id());
    };
    ZoneLog unused;
    const std::uint64_t noChain = 0;
    {
        Scheduler scheduler(options);
        // Chains get theirs on this thread while the workers take the tasks' from their own.
        for (int i = 0; i < count; ++i)
        {
            scheduler.Start([] {}).Detach();
            Task<void> chain = Child(scheduler, noChain, unused); // never started
            const std::uint64_t id = chain.ChainId();
            std::lock_guard guard(lock);
            ids.push_back(id);
        }
        scheduler.Stop();
    }
    REQUIRE(ids.size() == static_cast<std::size_t>(count) * 2);
    std::sort(ids.begin(), ids.end());
    CHECK(ids.front() != 0);
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
}

TEST_CASE("a throwing coroutine hook ends the process, naming it", "[coroutinehooks]")
{
    for (const char* hook : {"coroutineEnter", "coroutineLeave"})
    {
        const auto result = TestSupport::RunInChild(
            [hook]
            {
                SchedulerOptions options;
                options.name = "hooked";
                auto thrower = [hook](const char* self)
                {
                    return [hook, self](std::uint64_t, const char*)
                    {
                        if (std::strcmp(hook, self) == 0)
                            throw std::runtime_error("boom");
                    };
                };
                options.hooks.coroutineEnter = thrower("coroutineEnter");
                options.hooks.coroutineLeave = thrower("coroutineLeave");
                Scheduler scheduler(std::move(options));
                ZoneLog log;
                std::uint64_t chain = 0;
                Task<void> task = Child(scheduler, chain, log);
                scheduler.Submit(task.GetHandle());
                scheduler.RunUntilIdle();
                scheduler.RunUntilIdle();
            });
        INFO("hook " << hook << "; child stderr: " << result.stderrText);
        CHECK(result.aborted);
        CHECK(result.stderrText.find(std::string("scheduler hook threw: SchedulerHooks::") + hook +
                                     " of TC::Scheduler('hooked') threw: boom") != std::string::npos);
    }
}
