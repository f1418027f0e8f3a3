// Misuse and limits: each case has one documented, deterministic outcome (guides/reliability.md).
// Outcomes that end a process are checked in a child process (fork), as tests/kernel does.
// The stack overflow case lives in tests/kernel/Stacks_test.cpp ("A stack overflow hits the
// guard page"): SIGSEGV (or SIGBUS) at the guard page, or ASan's report under asan.

#include "support/StressScale.h"
#include <TC/Core.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Synchronization/Mailbox.h>
#include <TC/Synchronization/ManualResetEvent.h>
#include <TC/Synchronization/ManualResetEvent_s.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <pthread.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using namespace std::chrono_literals;

namespace
{
double StressScale()
{
    return TC_MISUSE_SCALE * TCStress::FromEnvironment();
}

struct ChildOutcome
{
    pid_t pid = -1;
    int fd = -1;
    bool ended = false;
    bool killedByUs = false; // the pattern appeared and we killed the child
    bool signalled = false;
    int exitCode = -1;
    double seconds = 0;
    std::string stderrText;
};

// Forks a child that runs `body` with its stderr piped back. Children are forked from the
// calling thread only (a sanitizer runtime does not support a fork racing other test threads).
template <class Body>
ChildOutcome StartChild(Body body)
{
    int fds[2];
    if (pipe(fds) != 0)
        return {};
    const pid_t child = fork();
    if (child == 0)
    {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE})
            std::signal(sig, SIG_DFL);
        body();
        _exit(0);
    }
    close(fds[1]);
    ChildOutcome outcome;
    outcome.pid = child;
    outcome.fd = fds[0];
    return outcome;
}

// Collects the children's stderr. A child whose stderr shows `pattern` (if given) is killed
// (SIGKILL) at once; any still running `limit` after `start` is killed too. Each outcome's
// seconds count from `start`: a time taken before the children were forked bounds their age.
void CollectChildren(std::vector<ChildOutcome*> children, const char* pattern,
                     std::chrono::seconds limit,
                     std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now())
{
    const auto deadline = start + limit;
    auto finish = [&](ChildOutcome& c, bool kill9)
    {
        if (kill9)
            kill(c.pid, SIGKILL);
        close(c.fd);
        int status = 0;
        waitpid(c.pid, &status, 0);
        c.ended = true;
        c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        c.signalled = WIFSIGNALED(status);
        c.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    for (;;)
    {
        std::vector<pollfd> fds;
        std::vector<ChildOutcome*> open;
        for (ChildOutcome* c : children)
            if (!c->ended)
            {
                fds.push_back({c->fd, POLLIN, 0});
                open.push_back(c);
            }
        if (open.empty())
            return;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
        {
            for (ChildOutcome* c : open)
                finish(*c, true);
            return;
        }
        if (poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0)
            continue;
        for (std::size_t i = 0; i < fds.size(); ++i)
        {
            if (!fds[i].revents)
                continue;
            ChildOutcome& c = *open[i];
            char buffer[512];
            const ssize_t n = read(c.fd, buffer, sizeof buffer);
            if (n <= 0)
            {
                finish(c, false); // it closed stderr: it ended
                continue;
            }
            c.stderrText.append(buffer, static_cast<std::size_t>(n));
            if (pattern && c.stderrText.find(pattern) != std::string::npos)
            {
                c.killedByUs = true;
                finish(c, true);
            }
        }
    }
}

// Publishes the handle in one lock-free word; whoever exchanges it out owns it.
class Slot final : public ISuspendCallback
{
public:
    void OnSuspended(SuspendedTask task) noexcept override { word.store(task); }
    bool OnTimeout(SuspendedTask) noexcept override { return word.exchange(nullptr) != nullptr; }
    std::atomic<SuspendedTask> word{nullptr};
};

// Resumes itself from OnSuspended: the wait is over before any deadline could pass.
class ResumeAtOnce final : public ISuspendCallback
{
public:
    void OnSuspended(SuspendedTask task) noexcept override
    {
        word.store(task);
        if (SuspendedTask mine = word.exchange(nullptr))
            ResumeTask(mine);
    }
    bool OnTimeout(SuspendedTask) noexcept override { return word.exchange(nullptr) != nullptr; }
    std::atomic<SuspendedTask> word{nullptr};
};

const char* const kHangReport = "has waited 5 s for";
} // namespace

// --------------------------------------------------------------------------------------------
// Shutdown with suspended tasks

TEST_CASE("~Scheduler with a task that is never resumed: waits, prints a hang report after 5 s",
          "[misuse][shutdown]")
{
    // Both schedulers kinds at once, each in its own child, to spend the 5 s only once.
    auto neverResumed = [](unsigned workers)
    {
        return [workers]
        {
            Slot slot;
            SchedulerOptions options;
            options.workerCount = workers;
            options.name = workers ? "stuck-workers" : "stuck-host";
            Scheduler scheduler(options);
            scheduler.Start([&slot] { SuspendTask(&slot); }).Detach();
            if (workers == 0)
                scheduler.RunUntilIdle();
            // ~Scheduler: waits forever; the parent kills us once the report is out.
        };
    };
    // Timed from before the forks, so that a slow second fork cannot make the first report look
    // early.
    const auto forked = std::chrono::steady_clock::now();
    ChildOutcome workersOutcome = StartChild(neverResumed(2));
    ChildOutcome hostOutcome = StartChild(neverResumed(0));
    CollectChildren({&workersOutcome, &hostOutcome}, kHangReport, 20s, forked);
    for (const ChildOutcome* outcome :
         {&std::as_const(workersOutcome), &std::as_const(hostOutcome)})
    {
        INFO(outcome->stderrText);
        REQUIRE(outcome->killedByUs); // still waiting when the report appeared
        CHECK(outcome->seconds >= 4.9);
        CHECK(outcome->seconds < 15);
        CHECK(outcome->stderrText.find("1 task(s)") != std::string::npos);
    }
    CHECK(workersOutcome.stderrText.find("stuck-workers") != std::string::npos);
    CHECK(hostOutcome.stderrText.find("stuck-host") != std::string::npos);
}

TEST_CASE("~Scheduler with tasks suspended: returns once they are resumed, even after the report",
          "[misuse][shutdown]")
{
    auto lateResume = [](unsigned workers)
    {
        return [workers]
        {
            // Stderr goes through a pipe that the resumer passes on to the parent, resuming the
            // task once the report went by: a resumer that slept past the report's due time
            // instead could beat a reporter descheduled on a loaded machine.
            int relay[2];
            if (pipe(relay) != 0)
                std::_Exit(4);
            const int parentStderr = dup(STDERR_FILENO);
            dup2(relay[1], STDERR_FILENO);
            close(relay[1]);
            auto passOn = [parentStderr](const char* bytes, ssize_t n)
            {
                if (write(parentStderr, bytes, static_cast<std::size_t>(n)) != n)
                    std::_Exit(4);
            };
            Slot slot;
            std::atomic<bool> finished{false};
            std::thread resumer;
            {
                SchedulerOptions options;
                options.workerCount = workers;
                options.name = "late";
                Scheduler scheduler(options);
                scheduler
                    .Start(
                        [&]
                        {
                            SuspendTask(&slot);
                            finished.store(true);
                        })
                    .Detach();
                if (workers == 0)
                    scheduler.RunUntilIdle();
                resumer = std::thread(
                    [&slot, &passOn, from = relay[0]]
                    {
                        std::string seen;
                        char buffer[512];
                        while (seen.find(kHangReport) == std::string::npos)
                        {
                            const ssize_t n = read(from, buffer, sizeof buffer);
                            if (n <= 0)
                                std::_Exit(4);
                            passOn(buffer, n);
                            seen.append(buffer, static_cast<std::size_t>(n));
                        }
                        SuspendedTask task;
                        while (!(task = slot.word.exchange(nullptr)))
                            std::this_thread::yield();
                        ResumeTask(task);
                    });
            } // ~Scheduler waits for the task (pumping it when host-pumped)
            resumer.join();
            // Stderr is the parent's again; whatever came through the pipe since is passed on.
            dup2(parentStderr, STDERR_FILENO);
            char buffer[512];
            for (ssize_t n; (n = read(relay[0], buffer, sizeof buffer)) > 0;)
                passOn(buffer, n);
            std::fprintf(stderr, "destructor returned, task finished: %d\n",
                         finished.load() ? 1 : 0);
            std::_Exit(finished.load() ? 0 : 3);
        };
    };
    ChildOutcome workersOutcome = StartChild(lateResume(2));
    ChildOutcome hostOutcome = StartChild(lateResume(0));
    CollectChildren({&workersOutcome, &hostOutcome}, nullptr, 30s);
    for (const ChildOutcome* outcome :
         {&std::as_const(workersOutcome), &std::as_const(hostOutcome)})
    {
        INFO(outcome->stderrText);
        CHECK(outcome->exitCode == 0);
        CHECK(outcome->stderrText.find(kHangReport) != std::string::npos); // printed once...
        CHECK(outcome->stderrText.find(kHangReport) == outcome->stderrText.rfind(kHangReport));
        CHECK(outcome->stderrText.find("destructor returned, task finished: 1") !=
              std::string::npos); // ...and the wait still ended
    }
}

// --------------------------------------------------------------------------------------------
// ResumeTask from a signal handler

namespace
{
std::atomic<SuspendedTask> gSignalSlot{nullptr};
std::atomic<int> gHandlerResumes{0};

void ResumeFromHandler(int) noexcept
{
    // Only lock-free atomics and ResumeTask here.
    if (SuspendedTask task = gSignalSlot.exchange(nullptr))
    {
        gHandlerResumes.fetch_add(1); // before: the waiter may return as soon as it is resumed
        ResumeTask(task);
    }
}

class SignalSlot final : public ISuspendCallback
{
public:
    void OnSuspended(SuspendedTask task) noexcept override { gSignalSlot.store(task); }
};

// A dedicated thread that raises `sig` on itself whenever a handle is published, so the handler
// runs on a thread that holds no lock of ours or the kernel's.
class SignalRaiser
{
public:
    explicit SignalRaiser(int sig) : sig_(sig)
    {
        struct sigaction action;
        std::memset(&action, 0, sizeof action);
        action.sa_handler = &ResumeFromHandler;
        sigemptyset(&action.sa_mask);
        sigaction(sig_, &action, &previous_);
        thread_ = std::thread(
            [this]
            {
                while (!stop_.load())
                {
                    if (gSignalSlot.load() != nullptr)
                        raise(sig_); // the handler runs on this thread before raise returns
                    else
                        std::this_thread::yield();
                }
            });
    }
    ~SignalRaiser()
    {
        stop_.store(true);
        thread_.join();
        sigaction(sig_, &previous_, nullptr);
    }
    SignalRaiser(const SignalRaiser&) = delete;
    SignalRaiser& operator=(const SignalRaiser&) = delete;

private:
    int sig_;
    struct sigaction previous_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};
} // namespace

TEST_CASE("ResumeTask from a signal handler resumes a converted thread's wait", "[misuse][signal]")
{
    SignalRaiser raiser(SIGUSR1);
    SignalSlot slot;
    gHandlerResumes.store(0);
    const int rounds = static_cast<int>(2000 * StressScale()) + 10;
    std::thread waiter(
        [&]
        {
            for (int i = 0; i < rounds; ++i)
                SuspendTask(&slot);
        });
    waiter.join();
    REQUIRE(gHandlerResumes.load() == rounds);
}

// ResumeTask of a *task* waiter from a handler is not async-signal-safe: it queues the task on
// its scheduler, which may malloc (moodycamel's producer and blocks; ThreadSanitizer reports
// "signal-unsafe call inside of a signal") and take the sleeper mutex. The safe shape: the
// handler resumes a converted thread's wait (a futex word), and that thread resumes the task.
TEST_CASE("A task woken by a signal: the handler resumes a relay thread, which resumes the task",
          "[misuse][signal]")
{
    SignalRaiser raiser(SIGALRM);
    SignalSlot relaySlot;
    Slot taskSlot;
    gHandlerResumes.store(0);
    const int rounds = static_cast<int>(2000 * StressScale()) + 10;
    Scheduler scheduler(2);
    std::atomic<int> passed{0};
    std::thread relay(
        [&]
        {
            for (int i = 0; i < rounds; ++i)
            {
                SuspendTask(&relaySlot); // resumed from the handler
                SuspendedTask task;
                while (!(task = taskSlot.word.exchange(nullptr)))
                    std::this_thread::yield();
                ResumeTask(task);
            }
        });
    scheduler
        .Start(
            [&]
            {
                for (int i = 0; i < rounds; ++i)
                {
                    SuspendTask(&taskSlot);
                    passed.fetch_add(1);
                }
            })
        .Join();
    relay.join();
    REQUIRE(passed.load() == rounds);
    REQUIRE(gHandlerResumes.load() == rounds);
}

// --------------------------------------------------------------------------------------------
// Many waiters on one Multiple primitive

TEST_CASE("100 000 tasks wait on one ManualResetEvent: the waiter stack has no limit",
          "[misuse][waiters]")
{
    const int count = static_cast<int>(100000 * StressScale());
    SchedulerOptions options;
    options.workerCount = 2;
    options.stackSize = StackSize::Small;
    options.stackGuard = StackGuard::None; // one mapping per stack: stays under vm.max_map_count
    // Declared before the scheduler so it outlives the workers: a waiter's OnSuspended may still
    // be running on one after the waiter itself returned (see guides/reliability.md).
    Synchronization::ManualResetEvent event;
    Scheduler scheduler(options);
    std::atomic<int> arrived{0};
    std::atomic<int> passed{0};
    std::vector<JoinHandle> tasks;
    tasks.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
        tasks.push_back(scheduler.Start(
            [&]
            {
                arrived.fetch_add(1);
                event.Wait();
                passed.fetch_add(1);
            }));
    while (arrived.load() < count)
        std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);
    REQUIRE(passed.load() == 0);
    REQUIRE(scheduler.LiveTasks() == static_cast<std::size_t>(count));
    event.Set();
    for (JoinHandle& task : tasks)
        task.Join();
    REQUIRE(passed.load() == count);
}

// --------------------------------------------------------------------------------------------
// Zero and negative durations

namespace
{
struct CoroutineResult
{
    std::atomic<int> value{-1};
};

DetachedTask TimedCoroutine(Scheduler& host, ISuspendCallback* callback, Duration timeout,
                            CoroutineResult& result)
{
    co_await host.Schedule();
    result.value.store((co_await SuspendTaskForAsync(callback, timeout)) ? 1 : 0);
}
} // namespace

TEST_CASE("A zero or negative Duration times out at once unless the waiter was already resumed",
          "[misuse][duration]")
{
    EnableTimers();
    const Duration expired[] = {Duration::Zero(), Duration(-1s), Duration(-1ns),
                                Duration::FromNanoseconds(-5), Duration(0ms)};
    for (const Duration timeout : expired)
        REQUIRE(timeout.Nanoseconds() == 0);

    SECTION("a converted thread")
    {
        for (const Duration timeout : expired)
        {
            Slot slot;
            const auto start = std::chrono::steady_clock::now();
            REQUIRE_FALSE(SuspendTaskFor(&slot, timeout));
            REQUIRE(std::chrono::steady_clock::now() - start < 1s);
            REQUIRE(slot.word.load() == nullptr); // OnTimeout took it back
            ResumeAtOnce self;
            REQUIRE(SuspendTaskFor(&self, timeout));
        }
    }
    SECTION("a task")
    {
        Scheduler scheduler(1);
        for (const Duration timeout : expired)
        {
            Slot slot;
            ResumeAtOnce self;
            bool timedOut = false;
            bool resumed = false;
            scheduler
                .Start(
                    [&]
                    {
                        timedOut = !SuspendTaskFor(&slot, timeout);
                        resumed = SuspendTaskFor(&self, timeout);
                    })
                .Join();
            REQUIRE(timedOut);
            REQUIRE(resumed);
        }
    }
    SECTION("a coroutine")
    {
        Scheduler host;
        for (const Duration timeout : expired)
        {
            Slot slot;
            CoroutineResult result;
            TimedCoroutine(host, &slot, timeout, result);
            const auto deadline = std::chrono::steady_clock::now() + 5s;
            while (result.value.load() < 0 && std::chrono::steady_clock::now() < deadline)
            {
                host.RunUntilIdle();
                std::this_thread::yield();
            }
            REQUIRE(result.value.load() == 0);
        }
    }
    SECTION("a primitive: an unset event times out, a set one passes")
    {
        Synchronization::ManualResetEvent_s event;
        REQUIRE_FALSE(event.Wait(Duration::Zero()));
        REQUIRE_FALSE(event.Wait(-5ms));
        event.Set();
        REQUIRE(event.Wait(Duration::Zero()));
        REQUIRE(event.Wait(-5ms));
    }
}

// Run alone (ctest misuse.duration-without-timers): timers are process-wide and once enabled stay
// enabled.
TEST_CASE("Without EnableTimers a zero timeout waits without limit", "[.][no-timers]")
{
    REQUIRE_FALSE(TimersEnabled());
    Slot slot;
    // Before the resumer exists: its 50 ms sleep can only end after this.
    const auto start = std::chrono::steady_clock::now();
    std::thread resumer(
        [&]
        {
            std::this_thread::sleep_for(50ms);
            SuspendedTask task;
            while (!(task = slot.word.exchange(nullptr)))
                std::this_thread::yield();
            ResumeTask(task);
        });
    const bool resumed = SuspendTaskFor(&slot, Duration::Zero());
    const auto waited = std::chrono::steady_clock::now() - start;
    resumer.join();
    REQUIRE(resumed); // resumed, not timed out
    REQUIRE(waited >= 50ms);
}

// Checked builds: destroying a primitive while a waiter is suspended on it fails at once, naming
// the rule, the primitive's type and the waiter (registered only where checked mode is on).
TEST_CASE("A primitive destroyed while a task waits on it is named in checked mode", "[misuse][destroyed]")
{
    REQUIRE(TC::IsCheckedBuild());
    ChildOutcome child = StartChild(
        []
        {
            TC::Scheduler scheduler(1);
            auto* mailbox = new TC::Synchronization::Mailbox<int>();
            auto taker = scheduler.Start([mailbox] { (void)mailbox->Take(); }, {.name = "taker"});
            while (!mailbox->IsSuspended())
                std::this_thread::yield();
            delete mailbox; // the rule is broken here
            std::_Exit(0);  // not reached in a checked build
        });
    CollectChildren({&child}, nullptr, std::chrono::seconds(30));
    INFO(child.stderrText);
    REQUIRE(child.signalled);
    REQUIRE(child.stderrText.find("TC checked mode: destroy a primitive only when nobody waits on it: "
                                  "TC::Synchronization::Mailbox<int> was destroyed while task 'taker' "
                                  "was suspended on it")
            != std::string::npos);
}
