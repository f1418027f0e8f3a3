// Scheduler hooks: threadStart/threadStop once per worker with its index, on that worker's
// thread; taskEnter/taskLeave in matched pairs on one thread, with the task's stable name --
// across suspensions, yields and moves between the host and the workers.

#include "EmbeddingTestSupport.h"

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using TC::Synchronization::Future;
using TC::Synchronization::MakeFuture;
using TC::Synchronization::Promise;

namespace
{
constexpr const char* kSimName = "sim";
constexpr const char* kMoverName = "mover";

struct HookLog
{
    std::mutex lock;
    std::vector<std::string> threadEvents; // "start 0", "stop 0", ...
    std::map<unsigned, std::thread::id> startThread, stopThread;
    std::map<const void*, int> entersByName, leavesByName; // keyed by the name pointer
    std::atomic<int> enters{0};
    std::atomic<int> leaves{0};
    std::atomic<int> mismatches{0};
};

// The task entered on this thread and not yet left: enter/leave must alternate per thread.
thread_local TC::TaskHandle tlsEntered;

TC::SchedulerHooks MakeHooks(HookLog& log)
{
    TC::SchedulerHooks hooks;
    hooks.threadStart = [&log](unsigned index)
    {
        std::lock_guard guard(log.lock);
        log.threadEvents.push_back("start " + std::to_string(index));
        log.startThread[index] = TC::Testing::ThisThreadId();
    };
    hooks.threadStop = [&log](unsigned index)
    {
        std::lock_guard guard(log.lock);
        log.threadEvents.push_back("stop " + std::to_string(index));
        log.stopThread[index] = TC::Testing::ThisThreadId();
    };
    hooks.taskEnter = [&log](TC::TaskHandle task, const char* name)
    {
        if (tlsEntered || !task)
            ++log.mismatches;
        tlsEntered = task;
        ++log.enters;
        std::lock_guard guard(log.lock);
        ++log.entersByName[name];
    };
    hooks.taskLeave = [&log](TC::TaskHandle task, const char* name)
    {
        if (tlsEntered != task)
            ++log.mismatches;
        tlsEntered = TC::TaskHandle();
        ++log.leaves;
        std::lock_guard guard(log.lock);
        ++log.leavesByName[name];
    };
    return hooks;
}
} // namespace

TEST_CASE("hooks are called in matched pairs", "[hooks]")
{
    HookLog log;
    const auto mainId = TC::Testing::ThisThreadId();
    constexpr int kSims = 50;
    {
        TC::SchedulerOptions hostOptions;
        hostOptions.name = "host";
        hostOptions.hooks = MakeHooks(log);
        TC::Scheduler host(hostOptions);
        TC::SchedulerOptions workerOptions;
        workerOptions.name = "workers";
        workerOptions.workerCount = 2;
        workerOptions.hooks = MakeHooks(log);
        TC::Scheduler workers(workerOptions);
        host.RunPending();

        // Catch2 is not thread-safe: tasks count failures, the test thread checks them.
        std::atomic<int> failures{0};
        std::vector<Promise<int>> promises(kSims);
        std::vector<TC::JoinHandle> sims;
        for (int i = 0; i < kSims; ++i)
            sims.push_back(workers.Start(
                [f = promises[i].GetFuture(), i, &failures]() mutable
                {
                    TC::YieldTask();
                    if (f.Wait() != i) // suspends, resumes: another enter/leave pair
                        ++failures;
                },
                {.name = kSimName}));
        auto mover = workers.Start(
            [&]
            {
                TC::MoveCurrentTaskTo(host);
                if (TC::Testing::ThisThreadId() != mainId)
                    ++failures;
                TC::MoveCurrentTaskTo(workers);
            },
            {.name = kMoverName});
        auto unnamed = host.Start([] { TC::YieldTask(); });
        for (int i = 0; i < kSims; ++i)
            promises[i].SetValue(i);
        for (auto& sim : sims)
            sim.Join();
        mover.Join();
        unnamed.Join();
        CHECK(failures == 0);
    }
    CHECK(log.mismatches == 0);
    CHECK(log.enters == log.leaves);
    CHECK(log.entersByName == log.leavesByName);
    // Each sim ran at least three times (start, after the yield, after the wait unless ready).
    CHECK(log.entersByName[kSimName] >= 2 * kSims);
    // The mover ran on the workers, then the host, then the workers.
    CHECK(log.entersByName[kMoverName] >= 3);
    // A task started without a name is reported as "task" (compared by content: the kernel's
    // literal).
    int unnamedEnters = 0;
    for (const auto& [name, count] : log.entersByName)
        if (std::string(static_cast<const char*>(name)) == "task")
            unnamedEnters += count;
    CHECK(unnamedEnters >= 2);

    // Only the two workers are threads of their own; the host scheduler has none.
    std::vector<std::string> events = log.threadEvents;
    std::sort(events.begin(), events.end());
    CHECK(events == std::vector<std::string>{"start 0", "start 1", "stop 0", "stop 1"});
    for (unsigned index : {0u, 1u})
    {
        CHECK(log.startThread[index] == log.stopThread[index]);
        CHECK(log.startThread[index] != mainId);
        const auto& order = log.threadEvents;
        const auto start = std::find(order.begin(), order.end(), "start " + std::to_string(index));
        const auto stop = std::find(order.begin(), order.end(), "stop " + std::to_string(index));
        CHECK(start < stop);
    }
    CHECK(log.startThread[0] != log.startThread[1]);
}

TEST_CASE("taskEnter runs on the thread that runs the task", "[hooks]")
{
    std::mutex lock;
    std::set<std::thread::id> enterThreads;
    std::set<std::thread::id> taskThreads;
    {
        TC::SchedulerOptions options;
        options.workerCount = 2;
        options.hooks.taskEnter = [&](TC::TaskHandle, const char*)
        {
            std::lock_guard guard(lock);
            enterThreads.insert(TC::Testing::ThisThreadId());
        };
        TC::Scheduler workers(options);
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 20; ++i)
            tasks.push_back(workers.Start(
                [&]
                {
                    std::lock_guard guard(lock);
                    taskThreads.insert(TC::Testing::ThisThreadId());
                }));
        for (auto& task : tasks)
            task.Join();
    }
    CHECK(enterThreads == taskThreads);
}
