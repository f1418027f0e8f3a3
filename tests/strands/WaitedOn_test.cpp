// Diagnostics name what a waiter of this layer waits on: DumpTasks shows a task in
// Strand::WaitIdle or KeyedStrands::WaitIdle as waiting on the Strand or the KeyedStrands, and a
// coroutine parked in AsyncQueue::Pop as waiting on the queue.

#include "StrandsTestSupport.h"

#include <TC/Core.h>
#include <TC/Strands/AsyncQueue.h>
#include <TC/Strands/DetachedTask.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

using namespace TC;
using namespace TC::Strands;
using TCTest::ManualExecutor;
using namespace std::chrono_literals;

namespace
{
// The dump's line for the task named `name` once it holds `part`, polled for at most 60 s.
std::string TaskLineWith(const std::string& name, const std::string& part)
{
    const auto giveUp = std::chrono::steady_clock::now() + 60s;
    for (;;)
    {
        std::ostringstream out;
        DumpTasks(out);
        const std::string dump = out.str();
        const std::size_t at = dump.find(" '" + name + "' ");
        std::string line;
        if (at != std::string::npos)
        {
            const std::size_t begin = dump.rfind('\n', at) + 1;
            line = dump.substr(begin, dump.find('\n', at) - begin);
        }
        if (line.find(part) != std::string::npos || std::chrono::steady_clock::now() > giveUp)
            return line;
        std::this_thread::sleep_for(1ms);
    }
}
} // namespace

TEST_CASE("DumpTasks shows a task in Strand::WaitIdle as waiting on the Strand", "[strand]")
{
    ManualExecutor base; // runs the strand's work only when the test says so
    Strand strand(base);
    strand.Post([] {});
    Scheduler scheduler(1u);
    auto waiter = scheduler.Start([&strand] { strand.WaitIdle(); }, {.name = "strand-waiter"});
    const std::string line = TaskLineWith("strand-waiter", "suspended");
    INFO(line);
    CHECK(line.find("waits on TC::Strands::Strand at 0x") != std::string::npos);
    while (base.RunOne())
    {
    }
    waiter.Join();
}

TEST_CASE("DumpTasks shows a task in KeyedStrands::WaitIdle as waiting on the KeyedStrands", "[keyed]")
{
    ManualExecutor base;
    KeyedStrands<int> keyed(base);
    keyed.Post(7, [] {});
    Scheduler scheduler(1u);
    auto waiter = scheduler.Start([&keyed] { keyed.WaitIdle(); }, {.name = "keyed-waiter"});
    const std::string line = TaskLineWith("keyed-waiter", "suspended");
    INFO(line);
    CHECK(line.find("waits on TC::Strands::KeyedStrands at 0x") != std::string::npos);
    while (base.RunOne())
    {
    }
    waiter.Join();
}

namespace
{
std::string Dump()
{
    std::ostringstream out;
    DumpTasks(out);
    return out.str();
}

DetachedTask PopOnce(AsyncQueue<int>* queue, int* popped)
{
    if (auto item = co_await queue->Pop())
        *popped = *item;
}
} // namespace

TEST_CASE("DumpTasks lists a coroutine parked in AsyncQueue::Pop as waiting on the queue, in every "
          "build",
          "[asyncqueue]")
{
    ManualExecutor base;
    AsyncQueue<int> queue(base);
    int popped = 0;
    PopOnce(&queue, &popped);
    REQUIRE(queue.HasWaiter());
    std::string dump = Dump();
    INFO(dump);
    CHECK(dump.find("coroutines suspended:\n  coroutine 0x") != std::string::npos);
    CHECK(dump.find(", waits on TC::Strands::AsyncQueue<int> at 0x") != std::string::npos);
    queue.Push(5); // hands it to the executor: no longer parked
    CHECK(Dump().find("AsyncQueue") == std::string::npos);
    base.RunAll();
    CHECK(popped == 5);
}
