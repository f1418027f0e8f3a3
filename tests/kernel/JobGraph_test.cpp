// JobGraph: every job runs once per Run and only after every job before it ended (seeing what
// those wrote), from a task, a converted thread or the host, run after run on one graph; no task
// per job; a job may wait on another one; the first exception is rethrown once all ended and
// jobs not begun are skipped; cycles, a Run in progress and a stopped scheduler are refused
// before any job runs.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Scaled;

namespace
{
// A graph whose jobs each count their runs in a plain int and check, before counting, that every
// job before them already counted this run (so what they wrote is visible: a broken order or a
// missing happens-before is a wrong count here, or a race under ThreadSanitizer).
struct CheckedGraph
{
    JobGraph graph;
    std::vector<JobGraph::Node> nodes;
    std::vector<std::vector<std::size_t>> before;
    std::vector<long> runs; // plain: written by its job only, read by the jobs after it
    std::atomic<long> misordered{0};
    long expected = 0; // runs each job has when the current Run begins

    explicit CheckedGraph(std::size_t count) : before(count), runs(count, 0)
    {
        for (std::size_t i = 0; i < count; ++i)
            nodes.push_back(graph.Add(
                [this, i]
                {
                    for (std::size_t p : before[i])
                        if (runs[p] != expected + 1)
                            ++misordered;
                    if (runs[i] != expected)
                        ++misordered;
                    ++runs[i];
                }));
    }

    void Precede(std::size_t first, std::size_t then)
    {
        graph.Precede(nodes[first], nodes[then]);
        before[then].push_back(first);
    }

    template <class RunOnce>
    void RunTimes(long times, RunOnce run)
    {
        for (long i = 0; i < times; ++i, ++expected)
            run();
    }

    // Runs the graph `times` times by `run()`, then checks every count.
    template <class RunOnce>
    void Check(long times, RunOnce run)
    {
        RunTimes(times, run);
        Verify();
    }

    void Verify()
    {
        REQUIRE(misordered.load() == 0);
        REQUIRE(std::count(runs.begin(), runs.end(), expected) == static_cast<long>(runs.size()));
    }
};

void Spin(std::chrono::microseconds time)
{
    const auto until = std::chrono::steady_clock::now() + time;
    while (std::chrono::steady_clock::now() < until)
    {
    }
}

// The frame shape: 1000 jobs, then 999 each after two neighbours of the first level, then one
// after all of those -- 2000 jobs on three levels.
void BuildFrame(CheckedGraph& frame)
{
    for (std::size_t j = 0; j < 999; ++j)
    {
        frame.Precede(j, 1000 + j);
        frame.Precede(j + 1, 1000 + j);
        frame.Precede(1000 + j, 1999);
    }
}

void BuildDiamond(CheckedGraph& diamond)
{
    diamond.Precede(0, 1);
    diamond.Precede(0, 2);
    diamond.Precede(1, 3);
    diamond.Precede(2, 3);
}
} // namespace

TEST_CASE("JobGraph runs a diamond in order, run after run, from a plain thread")
{
    Scheduler scheduler(2u);
    CheckedGraph diamond(4);
    BuildDiamond(diamond);
    diamond.Check(Scaled(5000), [&] { diamond.graph.Run(scheduler); });
}

TEST_CASE("JobGraph runs a 2000-job frame in order from a thread, a task and a converted thread")
{
    Scheduler scheduler(2u);
    CheckedGraph frame(2000);
    BuildFrame(frame);
    const long times = Scaled(1000);
    frame.Check(times, [&] { frame.graph.Run(scheduler); });
    frame.Check(times / 4, [&] { scheduler.Start([&] { frame.graph.Run(scheduler); }).Join(); });
    std::thread converted(
        [&]
        {
            ConvertCurrentThread();
            frame.RunTimes(times / 4, [&] { frame.graph.Run(scheduler); });
        });
    converted.join();
    frame.Verify();
}

TEST_CASE("JobGraph from the host: onto its own scheduler without workers, and onto workers")
{
    Scheduler host(0u);
    Scheduler workers(2u);
    host.RunUntilIdle(); // this thread is the host
    CheckedGraph frame(2000);
    BuildFrame(frame);
    const std::thread::id self = std::this_thread::get_id();
    std::atomic<long> elsewhere{0};
    JobGraph::Node probe = frame.graph.Add(
        [&]
        {
            if (std::this_thread::get_id() != self)
                ++elsewhere;
        });
    frame.graph.Precede(probe, frame.nodes[0]);
    frame.Check(Scaled(100), [&] { frame.graph.Run(host); });
    REQUIRE(elsewhere.load() == 0); // no helpers: the caller ran every job
    REQUIRE(host.LiveTasks() == 0);
    // A task of the host runs the graph on the workers while the host pumps with RunFor.
    const long times = Scaled(100);
    JoinHandle pumped = host.Start([&] { frame.Check(times, [&] { frame.graph.Run(workers); }); });
    while (!pumped.IsFinished())
        host.RunFor(std::chrono::milliseconds(1));
    pumped.Join();
    // And a task of the host onto the host: the caller runs every job, the host pumping.
    JoinHandle own = host.Start([&] { frame.Check(Scaled(20), [&] { frame.graph.Run(host); }); });
    while (!own.IsFinished())
        host.RunFor(std::chrono::milliseconds(1));
    own.Join();
}

TEST_CASE(
    "JobGraph runs its jobs as work items: 2000 jobs hold a few helper tasks, not a task each")
{
    Scheduler scheduler(2u);
    std::atomic<std::size_t> mostLive{0};
    JobGraph graph;
    std::vector<JobGraph::Node> firsts;
    for (int i = 0; i < 1000; ++i)
        firsts.push_back(graph.Add(
            [&]
            {
                const std::size_t live = scheduler.LiveTasks();
                std::size_t most = mostLive.load();
                while (live > most && !mostLive.compare_exchange_weak(most, live))
                {
                }
                Spin(std::chrono::microseconds(2)); // long enough for the helpers to join
            }));
    for (int i = 0; i < 1000; ++i)
        graph.Precede(firsts[static_cast<std::size_t>(i)], graph.Add([] {}));
    for (int i = 0; i < 10; ++i)
    {
        graph.Run(scheduler);
        while (scheduler.LiveTasks() != 0) // helpers that leave after their run ended
            std::this_thread::yield();
    }
    // A helper per worker; one that gave its slot up counts until its task ended, beside the
    // helper a push may start in that slot.
    REQUIRE(mostLive.load() <= 4);
}

TEST_CASE("JobGraph: a job that waits holds its participant while the others go on")
{
    TestSupport::Mailbox mailbox; // before the scheduler: it outlives every OnSuspended
    Scheduler scheduler(2u);
    for (long round = 0; round < Scaled(200); ++round)
    {
        JobGraph graph;
        std::atomic<int> took{0};
        std::atomic<int> seenAfter{0};
        JobGraph::Node waits = graph.Add([&] { took = mailbox.Take(); });
        JobGraph::Node after = graph.Add([&] { seenAfter = took.load(); });
        graph.Precede(waits, after);
        JobGraph::Node previous = graph.Add([] {});
        for (int i = 0; i < 50; ++i) // a chain the waiting job does not hold up
        {
            JobGraph::Node next = graph.Add([] { Spin(std::chrono::microseconds(1)); });
            graph.Precede(previous, next);
            previous = next;
        }
        graph.Precede(previous, graph.Add([&] { mailbox.Put(7); }));
        if (round % 2 == 0)
            graph.Run(scheduler);
        else
            scheduler.Start([&] { graph.Run(scheduler); }).Join();
        REQUIRE(took.load() == 7);
        REQUIRE(seenAfter.load() == 7);
    }
}

TEST_CASE("JobGraph rethrows the first exception once every job ended; jobs after it are skipped")
{
    Scheduler scheduler(2u);
    for (bool fromTask : {false, true})
    {
        JobGraph graph;
        std::atomic<bool> fail{true};
        std::atomic<int> running{0};
        std::atomic<int> runningAtReturn{-1};
        std::atomic<int> afterFailure{0};
        std::atomic<int> ran{0};
        JobGraph::Node thrower = graph.Add(
            [&]
            {
                ++ran;
                if (fail.load())
                    throw std::runtime_error("job failed");
            });
        graph.Precede(thrower, graph.Add([&] { ++afterFailure; }));
        for (int i = 0; i < 200; ++i)
            graph.Add(
                [&]
                {
                    ++running;
                    ++ran;
                    std::this_thread::yield();
                    --running;
                });
        auto run = [&]
        {
            try
            {
                graph.Run(scheduler);
            }
            catch (...)
            {
                runningAtReturn = running.load();
                throw;
            }
        };
        if (fromTask)
            REQUIRE_THROWS_WITH(scheduler.Start(run).Join(), "job failed");
        else
            REQUIRE_THROWS_WITH(run(), "job failed");
        REQUIRE(runningAtReturn.load() == 0);
        REQUIRE(afterFailure.load() == 0); // begins only after the failure: skipped
        // The graph runs again, whole.
        fail = false;
        ran = 0;
        graph.Run(scheduler);
        REQUIRE(ran.load() == 201);
        REQUIRE(afterFailure.load() == 1);
    }
}

TEST_CASE("JobGraph refuses a cycle at Run, naming a job on it, before any job runs")
{
    Scheduler scheduler(2u);
    JobGraph graph;
    std::atomic<int> ran{0};
    JobGraph::Node entry = graph.Add([&] { ++ran; }, "entry");
    JobGraph::Node a = graph.Add([&] { ++ran; }, "a");
    JobGraph::Node b = graph.Add([&] { ++ran; }, "b");
    JobGraph::Node c = graph.Add([&] { ++ran; }, "c");
    JobGraph::Node downstream = graph.Add([&] { ++ran; }, "downstream");
    graph.Precede(entry, a);
    graph.Precede(a, b);
    graph.Precede(b, c);
    graph.Precede(c, downstream);
    graph.Precede(c, a);
    std::string message;
    try
    {
        graph.Run(scheduler);
    }
    catch (const std::logic_error& error)
    {
        message = error.what();
    }
    REQUIRE(message.find("cycle") != std::string::npos);
    const bool namesOne = message.find("'a'") != std::string::npos ||
                          message.find("'b'") != std::string::npos ||
                          message.find("'c'") != std::string::npos;
    REQUIRE(namesOne);
    REQUIRE(ran.load() == 0);
    REQUIRE_THROWS_AS(graph.Precede(a, a), std::logic_error);
    JobGraph other;
    JobGraph::Node foreign = other.Add([] {});
    REQUIRE_THROWS_AS(graph.Precede(a, foreign), std::logic_error);
    REQUIRE_THROWS_AS(graph.Precede(JobGraph::Node{}, a), std::logic_error);
}

TEST_CASE("JobGraph refuses a Run in progress and building during a Run; an empty graph returns")
{
    TestSupport::Mailbox entered; // before the scheduler: they outlive every OnSuspended
    TestSupport::Mailbox release;
    Scheduler scheduler(2u);
    JobGraph empty;
    empty.Run(scheduler);
    REQUIRE(empty.Size() == 0);

    JobGraph graph;
    std::string nestedRun;
    std::string nestedAdd;
    graph.Add(
        [&]
        {
            try
            {
                graph.Run(scheduler);
            }
            catch (const std::logic_error& error)
            {
                nestedRun = error.what();
            }
            try
            {
                graph.Add([] {});
            }
            catch (const std::logic_error& error)
            {
                nestedAdd = error.what();
            }
            entered.Put(1);
            release.Take();
        });
    JoinHandle running = scheduler.Start([&] { graph.Run(scheduler); });
    REQUIRE(entered.Take() == 1);
    REQUIRE_THROWS_WITH(graph.Run(scheduler), "JobGraph::Run: the graph is already running");
    release.Put(1);
    running.Join();
    REQUIRE(nestedRun == "JobGraph::Run: the graph is already running");
    REQUIRE(nestedAdd == "JobGraph::Add: the graph is running");
    REQUIRE(graph.Size() == 1);
    graph.Add([] {}); // between runs, it may grow again
    REQUIRE(graph.Size() == 2);
}

TEST_CASE("JobGraph on a stopped scheduler throws before any job runs")
{
    Scheduler scheduler(2u);
    scheduler.Stop();
    JobGraph graph;
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i)
        graph.Add([&] { ++ran; });
    REQUIRE_THROWS_AS(graph.Run(scheduler), std::logic_error);
    REQUIRE(ran.load() == 0);
}

TEST_CASE("JobGraph stress: random graphs run many times, a million job runs in all")
{
    Scheduler scheduler(2u);
    const long total = Scaled(1'000'000);
    long jobRuns = 0;
    std::uint64_t seed = 0x9e3779b97f4a7c15ull;
    auto next = [&seed]
    {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        return seed;
    };
    long graphs = 0;
    while (jobRuns < total)
    {
        const std::size_t count = 1 + next() % 300;
        CheckedGraph random(count);
        for (std::size_t then = 1; then < count; ++then) // edges point forward only: no cycle
        {
            const std::uint64_t edges = next() % 4;
            for (std::uint64_t e = 0; e < edges; ++e)
                random.Precede(next() % then, then);
        }
        if (graphs % 4 == 1) // a last job after every other one: counted in groups
            for (std::size_t first = 0; first + 1 < count; ++first)
                random.Precede(first, count - 1);
        const long times = 1 + static_cast<long>(next() % 50);
        if (graphs % 3 == 2)
            random.Check(times,
                         [&] { scheduler.Start([&] { random.graph.Run(scheduler); }).Join(); });
        else
            random.Check(times, [&] { random.graph.Run(scheduler); });
        jobRuns += times * static_cast<long>(count);
        ++graphs;
    }
    while (scheduler.LiveTasks() != 0) // helpers that started after their run ended
        std::this_thread::yield();
}
