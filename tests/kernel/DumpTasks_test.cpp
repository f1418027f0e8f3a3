// DumpTasks and ~Scheduler's hang report: every task with its name, its state and what it
// waits on, in the build under test (Release included: linked against the plain kernel).

#include "support/Detached.h"
#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <poll.h>
#include <pthread.h>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace TC;
using namespace std::chrono_literals;
using TestSupport::Mailbox;

namespace
{
std::string Dump()
{
    std::ostringstream out;
    DumpTasks(out);
    return out.str();
}

// The dump's line for the task named `name` ("" when none).
std::string LineOf(const std::string& dump, const std::string& name)
{
    const std::size_t at = dump.find(" '" + name + "' ");
    if (at == std::string::npos)
        return {};
    const std::size_t begin = dump.rfind('\n', at) + 1;
    return dump.substr(begin, dump.find('\n', at) - begin);
}

// Polls the dump until `done` holds for it (a worker slow to start under TSan), at most 60 s.
template <class Done>
std::string DumpWhen(Done done)
{
    std::string dump = Dump();
    const auto giveUp = std::chrono::steady_clock::now() + 60s;
    while (!done(dump) && std::chrono::steady_clock::now() < giveUp)
    {
        std::this_thread::sleep_for(1ms);
        dump = Dump();
    }
    return dump;
}

bool Contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// A primitive that names itself: diagnostics show its name, not its type.
class NamedGate final : public ISuspendCallback
{
public:
    void Wait() { SuspendTask(this); }
    void Open() noexcept
    {
        if (SuspendedTask waiter = waiter_.exchange(nullptr))
            ResumeTask(waiter);
    }
    void OnSuspended(SuspendedTask task) noexcept override { waiter_.store(task); }
    WaitTarget WaitedOn() const noexcept override { return {this, &typeid(*this), "the named gate"}; }

private:
    std::atomic<SuspendedTask> waiter_{nullptr};
};
} // namespace

TEST_CASE("DumpTasks shows each task's name and state: running, ready, suspended, timed, finished")
{
    EnableTimers();
    Mailbox never, timed;
    NamedGate gate;
    std::atomic<bool> computing{false}, stop{false};
    SchedulerOptions options;
    options.workerCount = 1;
    options.name = "dumped";
    Scheduler scheduler(options);
    auto waiting = scheduler.Start([&] { (void)never.Take(); }, {.name = "waiting"});
    auto sleeper = scheduler.Start(
        [&] {
            int value = 0;
            (void)timed.Take(value, Duration(30s));
        },
        {.name = "sleeper"});
    auto gated = scheduler.Start([&] { gate.Wait(); }, {.name = "gated"});
    auto done = scheduler.Start([] {}, {.name = "done"});
    std::string dump = DumpWhen([](const std::string& text) {
        return Contains(LineOf(text, "waiting"), "suspended") && Contains(LineOf(text, "sleeper"), "deadline") &&
               Contains(LineOf(text, "gated"), "suspended") && Contains(LineOf(text, "done"), "finished");
    });
    auto busy = scheduler.Start(
        [&] {
            computing = true;
            while (!stop)
                std::this_thread::yield();
        },
        {.name = "busy"});
    while (!computing)
        std::this_thread::sleep_for(1ms);
    auto queued = scheduler.Start([] {}, {.name = "queued"});
    dump = Dump();
    INFO(dump);
    CHECK(Contains(dump, "scheduler 'dumped' (1 worker(s)):"));
    CHECK(Contains(LineOf(dump, "busy"), "running on worker 0"));
    CHECK(Contains(LineOf(dump, "queued"), "ready"));
    CHECK(Contains(LineOf(dump, "waiting"), "suspended"));
    CHECK(Contains(LineOf(dump, "waiting"), "waits on TestSupport::Mailbox at 0x"));
    CHECK(Contains(LineOf(dump, "sleeper"), "suspended"));
    CHECK(Contains(LineOf(dump, "sleeper"), " until a deadline in "));
    CHECK(Contains(LineOf(dump, "sleeper"), " ms, waits on TestSupport::Mailbox"));
    CHECK(Contains(LineOf(dump, "gated"), "waits on the named gate at 0x"));
    CHECK(Contains(LineOf(dump, "done"), "finished, not joined"));
    // Task ids are distinct numbers.
    CHECK(LineOf(dump, "busy").rfind("  task ", 0) == 0);
    stop = true;
    never.Put(1);
    timed.Put(1);
    gate.Open();
    for (JoinHandle* handle : {&waiting, &sleeper, &gated, &done, &busy, &queued})
        handle->Join();
    dump = Dump();
    INFO(dump);
    CHECK(LineOf(dump, "waiting").empty()); // joined tasks are gone
    CHECK(Contains(dump, "scheduler 'dumped' (1 worker(s)):\n  no live task"));
}

namespace
{
// The seconds of "suspended for N s" in `line`, or -1 when it says none.
double SuspendedSeconds(const std::string& line)
{
    const std::size_t at = line.find("suspended for ");
    return at == std::string::npos ? -1.0 : std::stod(line.substr(at + 14));
}
} // namespace

TEST_CASE("DumpTasks says how long each suspended task has waited, timed or not, in every build")
{
    EnableTimers();
    Mailbox never, timed;
    SchedulerOptions options;
    options.workerCount = 1;
    options.name = "waits";
    Scheduler scheduler(options);
    auto waiting = scheduler.Start([&] { (void)never.Take(); }, {.name = "waiting"});
    auto sleeper = scheduler.Start(
        [&] {
            int value = 0;
            (void)timed.Take(value, Duration(30s));
        },
        {.name = "sleeper"});
    (void)DumpWhen([](const std::string& text) {
        return Contains(LineOf(text, "waiting"), "suspended") && Contains(LineOf(text, "sleeper"), "deadline");
    });
    const auto suspended = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(300ms);
    const std::string dump = Dump();
    const double most = std::chrono::duration<double>(std::chrono::steady_clock::now() - suspended).count();
    INFO(dump);
    for (const char* name : {"waiting", "sleeper"})
    {
        const double seconds = SuspendedSeconds(LineOf(dump, name));
        CHECK(seconds >= 0.29);
        CHECK(seconds <= most + 1.0); // stamped with the worker's clock of when it suspended
    }
    CHECK(Contains(LineOf(dump, "sleeper"), " s until a deadline in "));
    never.Put(1);
    timed.Put(1);
    waiting.Join();
    sleeper.Join();
}

TEST_CASE("A task's wait is timed from when it suspended, after its worker slept, yielded or paused")
{
    // The stamp is the worker's coarse clock: it must be fresh after a worker slept idle, while
    // its other tasks keep yielding, and after a host paused between pumps.
    Mailbox afterSleep, afterYields, afterPause;
    SchedulerOptions options;
    options.workerCount = 1;
    options.name = "fresh";
    Scheduler scheduler(options);
    SchedulerOptions hostOptions;
    hostOptions.name = "paused host";
    Scheduler host(hostOptions);
    host.Start([] {}).Join(); // the host has pumped once, then pauses
    std::this_thread::sleep_for(500ms); // the worker sleeps idle meanwhile
    auto slept = scheduler.Start([&] { (void)afterSleep.Take(); }, {.name = "after-sleep"});
    auto hosted = host.Start([&] { (void)afterPause.Take(); }, {.name = "after-pause"});
    host.RunUntilIdle();
    std::atomic<bool> stop{false};
    auto yielder = scheduler.Start([&] { while (!stop) YieldTask(); }, {.name = "yielder"});
    std::this_thread::sleep_for(500ms); // the worker only yields meanwhile
    auto yielded = scheduler.Start([&] { (void)afterYields.Take(); }, {.name = "after-yields"});
    const std::string dump = DumpWhen([](const std::string& text) {
        return Contains(LineOf(text, "after-sleep"), "suspended") &&
               Contains(LineOf(text, "after-yields"), "suspended");
    });
    INFO(dump);
    // Two waited about 0.5 s, one about none (plus the dump's own polling); a clock read before
    // the sleep, the yields or the pause would add 0.5 s.
    CHECK(SuspendedSeconds(LineOf(dump, "after-pause")) >= 0.45);
    CHECK(SuspendedSeconds(LineOf(dump, "after-pause")) < 0.95);
    CHECK(SuspendedSeconds(LineOf(dump, "after-yields")) >= 0.0);
    CHECK(SuspendedSeconds(LineOf(dump, "after-yields")) < 0.45);
    CHECK(SuspendedSeconds(LineOf(dump, "after-sleep")) >= 0.45);
    CHECK(SuspendedSeconds(LineOf(dump, "after-sleep")) < 0.95);
    stop = true;
    afterSleep.Put(1);
    afterYields.Put(1);
    afterPause.Put(1);
    for (JoinHandle* handle : {&slept, &yielder, &yielded})
        handle->Join();
    host.RunUntilIdle();
    hosted.Join();
}

TEST_CASE("DumpTasks lists each converted thread that waits, with its id, name and wait, in every build")
{
    Mailbox box;
    std::atomic<int> threadId{0};
    std::thread waiter([&] {
        pthread_setname_np(pthread_self(), "dump-waiter");
        threadId = static_cast<int>(gettid());
        (void)box.Take();
    });
    while (threadId == 0)
        std::this_thread::sleep_for(1ms);
    const std::string prefix = "  thread " + std::to_string(threadId.load()) + " 'dump-waiter' ";
    std::string dump = DumpWhen([&](const std::string& text) { return Contains(text, prefix + "suspended for"); });
    std::this_thread::sleep_for(300ms);
    dump = Dump();
    INFO(dump);
    CHECK(Contains(dump, "converted threads waiting:\n"));
    const std::size_t at = dump.find(prefix);
    REQUIRE(at != std::string::npos);
    const std::string line = dump.substr(at, dump.find('\n', at) - at);
    CHECK(SuspendedSeconds(line) >= 0.29);
    CHECK(Contains(line, ", waits on TestSupport::Mailbox at 0x"));
    box.Put(1);
    waiter.join();
    dump = Dump();
    CHECK(!Contains(dump, "'dump-waiter'")); // its wait ended; and the thread is gone
}

TEST_CASE("DumpTasks shows a task in JoinHandle::Join as waiting on the Join, not its callback")
{
    Mailbox box;
    SchedulerOptions options;
    options.workerCount = 1;
    Scheduler scheduler(options);
    auto joined = scheduler.Start([&] { (void)box.Take(); }, {.name = "joined"});
    auto joiner = scheduler.Start([&] { joined.Join(); }, {.name = "joiner"});
    const std::string dump = DumpWhen([](const std::string& text) {
        return Contains(LineOf(text, "joiner"), "suspended");
    });
    INFO(dump);
    CHECK(Contains(LineOf(dump, "joiner"), "waits on TC::JoinHandle::Join at 0x"));
    box.Put(1);
    joiner.Join();
}

TEST_CASE("DumpTasks lists a host scheduler's tasks, and tasks of every scheduler")
{
    Mailbox box;
    SchedulerOptions hostOptions;
    hostOptions.name = "host";
    Scheduler host(hostOptions);
    SchedulerOptions workerOptions;
    workerOptions.workerCount = 1;
    workerOptions.name = "pool";
    Scheduler pool(workerOptions);
    auto hosted = host.Start([&] { (void)box.Take(); }, {.name = "hosted"});
    host.RunUntilIdle();
    auto pooled = pool.Start([] {}, {.name = "pooled"});
    const std::string dump = DumpWhen([](const std::string& text) {
        return Contains(LineOf(text, "pooled"), "finished");
    });
    INFO(dump);
    CHECK(Contains(dump, "scheduler 'host' (host-pumped):"));
    CHECK(Contains(dump, "scheduler 'pool' (1 worker(s)):"));
    CHECK(Contains(LineOf(dump, "hosted"), "suspended"));
    CHECK(dump.find("'hosted'") > dump.find("scheduler 'host'"));
    box.Put(1);
    host.RunUntilIdle();
    hosted.Join();
    pooled.Join();
}

TEST_CASE("DumpTasks lists a task that moved to another scheduler once, however often its block is "
          "reused")
{
    // Tasks that start on the pool, move to the host and end there give their blocks back to the
    // pool, which starts the next tasks in them: the registries must stay consistent through that.
    SchedulerOptions hostOptions;
    hostOptions.name = "host";
    Scheduler host(hostOptions);
    SchedulerOptions workerOptions;
    workerOptions.workerCount = 2;
    workerOptions.name = "pool";
    Scheduler pool(workerOptions);
    std::atomic<int> ended{0};
    constexpr int kRounds = 50;
    constexpr int kPerRound = 8;
    for (int round = 0; round < kRounds; ++round)
    {
        for (int i = 0; i < kPerRound; ++i)
            pool.Start([&] {
                    MoveCurrentTaskTo(host);
                    ended.fetch_add(1);
                }).Detach();
        while (ended.load() < (round + 1) * kPerRound)
            host.RunFor(Duration(std::chrono::milliseconds(1)));
    }
    Mailbox box;
    auto mover = pool.Start(
        [&] {
            MoveCurrentTaskTo(host);
            (void)box.Take();
        },
        {.name = "mover"});
    const std::string dump = DumpWhen([&](const std::string& text) {
        host.RunPending();
        return Contains(LineOf(text, "mover"), "suspended");
    });
    INFO(dump);
    CHECK(Contains(LineOf(dump, "mover"), "suspended"));
    CHECK(dump.find("'mover'") == dump.rfind("'mover'")); // listed once
    box.Put(1);
    while (!mover.IsFinished())
        host.RunFor(Duration(std::chrono::milliseconds(1)));
    mover.Join();
}

TEST_CASE("~Scheduler's hang report lists each task's name, state and what it waits on")
{
    // A task that computes, one in an 8 s timed wait and one not resumed: the report after 5 s
    // names each with its own state (only the last waits for a resume). In this process, with
    // stderr read through a pipe; the tasks are let go once the report is in, so the destructor
    // returns.
    EnableTimers();
    Mailbox never, timed;
    std::atomic<bool> stop{false};
    int report[2];
    REQUIRE(pipe(report) == 0);
    std::fflush(stderr);
    const int savedStderr = dup(STDERR_FILENO);
    dup2(report[1], STDERR_FILENO);
    close(report[1]);
    std::thread destroyer(
        [&]
        {
            SchedulerOptions options;
            options.workerCount = 2;
            options.name = "hung";
            Scheduler scheduler(options);
            scheduler.Start([&] { (void)never.Take(); }, {.name = "stuck"}).Detach();
            scheduler.Start([&] { int v = 0; (void)timed.Take(v, Duration(8s)); }, {.name = "timed"})
                .Detach();
            scheduler.Start([&] { while (!stop) std::this_thread::yield(); }, {.name = "computing"})
                .Detach();
            // ~Scheduler waits for them: the report comes after 5 s.
        });
    std::string text;
    const auto giveUp = std::chrono::steady_clock::now() + 60s; // no report: the test fails
    // The report is one write, ending with the last task's line.
    while (!Contains(text, "'computing'") && std::chrono::steady_clock::now() < giveUp)
    {
        pollfd readable{report[0], POLLIN, 0};
        char buffer[4096];
        ssize_t n = 0;
        if (poll(&readable, 1, 100) > 0 && (n = read(report[0], buffer, sizeof buffer)) > 0)
            text.append(buffer, static_cast<std::size_t>(n));
    }
    std::this_thread::sleep_for(100ms);
    for (pollfd readable{report[0], POLLIN, 0}; poll(&readable, 1, 0) > 0;)
    {
        char buffer[4096];
        const ssize_t n = read(report[0], buffer, sizeof buffer);
        if (n <= 0)
            break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    dup2(savedStderr, STDERR_FILENO);
    close(savedStderr);
    close(report[0]);
    stop = true;
    never.Put(1);
    timed.Put(1);
    destroyer.join();
    INFO(text);
    CHECK(Contains(text, "TC: ~Scheduler('hung') has waited 5 s for 3 task(s)"));
    CHECK(!Contains(text, "never resumed"));
    CHECK(Contains(LineOf(text, "computing"), "running on worker "));
    CHECK(Contains(LineOf(text, "timed"), "suspended"));
    CHECK(Contains(LineOf(text, "timed"), "until a deadline in "));
    CHECK(Contains(LineOf(text, "stuck"), "suspended"));
    CHECK(Contains(LineOf(text, "stuck"), "waits on TestSupport::Mailbox at 0x"));
    CHECK(!Contains(LineOf(text, "stuck"), "deadline"));
}

namespace
{
// Waits on `gate` once, then counts itself done.
TestSupport::Detached ParkOn(NamedGate* gate, std::atomic<int>* done)
{
    co_await SuspendTaskAsync(gate);
    ++*done;
}

// A coroutine its caller owns: suspended at its end, destroyed by ~Owned.
struct Owned
{
    struct promise_type
    {
        Owned get_return_object() noexcept { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
    std::coroutine_handle<promise_type> handle;
    ~Owned() { handle.destroy(); }
};

Owned OwnedParkOn(NamedGate* gate)
{
    co_await SuspendTaskAsync(gate);
}

// The dump's lines that list a coroutine.
std::string CoroutineLines(const std::string& dump)
{
    std::string lines;
    for (std::size_t at = dump.find("  coroutine "); at != std::string::npos; at = dump.find("  coroutine ", at + 1))
        lines += dump.substr(at, dump.find('\n', at) - at + 1);
    return lines;
}
} // namespace

TEST_CASE("DumpTasks lists each suspended coroutine and what it waits on until it is resumed, in every build")
{
    NamedGate gate;
    std::atomic<int> done{0};
    ParkOn(&gate, &done); // no executor: Open resumes it on the opening thread
    std::string dump = Dump();
    INFO(dump);
    CHECK(Contains(dump, "coroutines suspended:\n  coroutine 0x"));
    CHECK(Contains(CoroutineLines(dump), " suspended"));
    CHECK(Contains(CoroutineLines(dump), ", waits on the named gate at 0x"));
    gate.Open();
    CHECK(done == 1);
    CHECK(CoroutineLines(Dump()).empty());
}

TEST_CASE("DumpTasks says how long a coroutine parked on a worker has waited, in every build")
{
    SchedulerOptions options;
    options.workerCount = 1;
    Scheduler scheduler(options);
    NamedGate gate;
    std::atomic<int> done{0};
    scheduler.Start([&] { ParkOn(&gate, &done); }).Join(); // suspends on the worker, parked there
    const auto suspended = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(300ms);
    const std::string dump = Dump();
    const double most = std::chrono::duration<double>(std::chrono::steady_clock::now() - suspended).count();
    INFO(dump);
    const std::string line = CoroutineLines(dump);
    CHECK(Contains(line, ", waits on the named gate at 0x"));
    CHECK(SuspendedSeconds(line) >= 0.29);
    CHECK(SuspendedSeconds(line) <= most + 1.0);
    gate.Open(); // submits it to the scheduler
    (void)DumpWhen([&](const std::string&) { return done == 1; });
    CHECK(done == 1);
    CHECK(CoroutineLines(Dump()).empty());
}

TEST_CASE("A coroutine destroyed while parked leaves the dump, in every build")
{
    NamedGate gate;
    {
        Owned parked = OwnedParkOn(&gate);
        INFO(Dump());
        CHECK(Contains(CoroutineLines(Dump()), ", waits on the named gate at 0x"));
    }
    // The frame is gone with its entry; a dump that still listed it would read freed memory.
    CHECK(CoroutineLines(Dump()).empty());
}

namespace
{
// A one-waiter gate any thread may open.
struct Turnstile final : ISuspendCallback
{
    std::atomic<SuspendedTask> waiter{nullptr};
    void OnSuspended(SuspendedTask task) noexcept override { waiter.store(task); }
    void TryOpen() noexcept
    {
        if (SuspendedTask task = waiter.exchange(nullptr))
            ResumeTask(task);
    }
};

TestSupport::Detached PassRounds(Turnstile* gate, long rounds, std::atomic<int>* done)
{
    for (long i = 0; i < rounds; ++i)
        co_await SuspendTaskAsync(gate);
    ++*done;
}
} // namespace

TEST_CASE("DumpTasks while coroutines park on workers and are resumed from other threads reads "
          "only coroutines still parked")
{
    constexpr int kCoroutines = 8;
    const long rounds = TestSupport::Scaled(125'000); // a million waits in all, optimised
    Scheduler scheduler(2u);
    Turnstile gates[kCoroutines];
    std::atomic<int> done{0};
    for (Turnstile& gate : gates)
        scheduler.Start([&gate, rounds, &done] { PassRounds(&gate, rounds, &done); }).Join();
    const auto resume = [&] {
        while (done < kCoroutines)
            for (Turnstile& gate : gates)
                gate.TryOpen();
    };
    std::thread resumers[] = {std::thread(resume), std::thread(resume)};
    long dumps = 0, listed = 0;
    std::string stranger; // a listed line not of a coroutine waiting on its gate
    while (done < kCoroutines)
    {
        const std::string lines = CoroutineLines(Dump());
        ++dumps;
        for (std::size_t at = lines.find("  coroutine "); at != std::string::npos; at = lines.find("  coroutine ", at + 1))
            if (++listed; lines.compare(lines.find(", waits on ", at), 43, ", waits on (anonymous namespace)::Turnstile") != 0)
                stranger = lines.substr(at, lines.find('\n', at) - at);
    }
    for (std::thread& thread : resumers)
        thread.join();
    INFO("dumps taken: " << dumps << ", coroutines listed: " << listed);
    CHECK(stranger.empty());
    CHECK(listed > 0);
    CHECK(done == kCoroutines);
    CHECK(dumps > 0);
    CHECK(CoroutineLines(Dump()).empty());
}
