// Diagnostics name what a waiter of this layer waits on: DumpTasks shows a task or a converted
// thread waiting on a Future as waiting on the Future, not on its waiter callback.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

using namespace TC;
using namespace TC::Synchronization;
using namespace std::chrono_literals;

namespace
{
std::string Dump()
{
    std::ostringstream out;
    DumpTasks(out);
    return out.str();
}

// The dump once it has a line holding every one of `parts`, polled for at most 60 s.
std::string DumpWithLine(std::initializer_list<std::string> parts)
{
    const auto giveUp = std::chrono::steady_clock::now() + 60s;
    for (;;)
    {
        const std::string dump = Dump();
        std::istringstream lines(dump);
        for (std::string line; std::getline(lines, line);)
        {
            bool all = true;
            for (const std::string& part : parts)
                all = all && line.find(part) != std::string::npos;
            if (all)
                return dump;
        }
        if (std::chrono::steady_clock::now() > giveUp)
            return dump;
        std::this_thread::sleep_for(1ms);
    }
}

bool HasLine(const std::string& dump, std::initializer_list<std::string> parts)
{
    std::istringstream lines(dump);
    for (std::string line; std::getline(lines, line);)
    {
        bool all = true;
        for (const std::string& part : parts)
            all = all && line.find(part) != std::string::npos;
        if (all)
            return true;
    }
    return false;
}
} // namespace

TEST_CASE("DumpTasks shows a task and a thread waiting on a Future as waiting on the Future", "[waitedon]")
{
    auto forTask = MakeFuture<int>();
    auto forThread = MakeFuture<int>();
    Future<int>& taskFuture = forTask.first;
    Future<int>& threadFuture = forThread.first;
    Scheduler scheduler(1u);
    // Catch's assertions are for the test's thread: the waiters only keep what they got.
    int taskGot = 0;
    int threadGot = 0;
    auto waiter = scheduler.Start([&] { taskGot = taskFuture.Wait(); }, {.name = "future-waiter"});
    std::thread thread([&] { threadGot = threadFuture.Wait(); });
    const std::string dump = DumpWithLine({"'future-waiter' suspended", "waits on TC::Synchronization::Future at 0x"});
    const std::string both = DumpWithLine({"  thread ", "waits on TC::Synchronization::Future at 0x"});
    INFO(dump);
    INFO(both);
    CHECK(HasLine(dump, {"'future-waiter' suspended", "waits on TC::Synchronization::Future at 0x"}));
    CHECK(HasLine(both, {"  thread ", "suspended", "waits on TC::Synchronization::Future at 0x"}));
    CHECK(dump.find("Waiter") == std::string::npos); // not the callback's type
    forTask.second.SetValue(1);
    forThread.second.SetValue(2);
    waiter.Join();
    thread.join();
    CHECK(taskGot == 1);
    CHECK(threadGot == 2);
}
