// The floating-point control state is part of what a task owns, as the ABI makes it part of
// what a call preserves: a task that changes its rounding mode, flush-to-zero or x87 precision
// finds them unchanged after every suspension, on whichever worker it resumes, whatever the
// tasks that ran meanwhile set. A task starts with its worker thread's state (a host-pumped
// scheduler's: the host thread's in that turn), never with what the task before it left behind.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

using namespace TC;

namespace
{
// One value per control the switch must carry: the rounding mode (on x86-64 in MXCSR and the x87
// control word alike), flush-to-zero (MXCSR's FTZ and DAZ; AArch64's FPCR.FZ) and on x86-64 the
// x87 precision control, which lives in the x87 word only -- so that a switch that forgets
// either x86-64 word fails here.
struct Mode
{
    int rounding = FE_TONEAREST;
    bool flushToZero = false;
    unsigned x87Precision = 3; // 0: 24-bit, 2: 53-bit, 3: 64-bit (the default); x86-64 only

    bool operator==(const Mode& other) const
    {
#if defined(__x86_64__)
        return rounding == other.rounding && flushToZero == other.flushToZero &&
               x87Precision == other.x87Precision;
#elif defined(__aarch64__)
        return rounding == other.rounding && flushToZero == other.flushToZero;
#else
        return rounding == other.rounding;
#endif
    }
};

std::string Describe(const Mode& mode)
{
    return "rounding " + std::to_string(mode.rounding) + ", flush-to-zero " +
           (mode.flushToZero ? "on" : "off") + ", x87 precision " +
           std::to_string(mode.x87Precision);
}

#if defined(__x86_64__)
constexpr unsigned kFlushBits = 0x8040; // MXCSR FTZ (bit 15) and DAZ (bit 6)

unsigned short X87ControlWord()
{
    unsigned short word = 0;
    asm volatile("fnstcw %0" : "=m"(word));
    return word;
}
#elif defined(__aarch64__)
constexpr std::uint64_t kFlushBit = std::uint64_t{1} << 24; // FPCR.FZ

std::uint64_t Fpcr()
{
    std::uint64_t fpcr = 0;
    asm volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}
#endif

// Called from tasks on worker threads, where no Catch2 assertion may run: a rounding mode the
// platform lacks ends the test at once instead.
void Apply(const Mode& mode)
{
    if (std::fesetround(mode.rounding) != 0)
    {
        std::fprintf(stderr, "fesetround(%d) failed: the platform lacks that rounding mode\n",
                     mode.rounding);
        std::abort();
    }
#if defined(__x86_64__)
    _mm_setcsr((_mm_getcsr() & ~kFlushBits) | (mode.flushToZero ? kFlushBits : 0));
    unsigned short word = X87ControlWord();
    word = static_cast<unsigned short>((word & ~0x0300u) | (mode.x87Precision << 8));
    asm volatile("fldcw %0" : : "m"(word));
#elif defined(__aarch64__)
    const std::uint64_t fpcr = (Fpcr() & ~kFlushBit) | (mode.flushToZero ? kFlushBit : 0);
    asm volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

Mode Current()
{
    Mode mode;
    mode.rounding = std::fegetround();
#if defined(__x86_64__)
    mode.flushToZero = (_mm_getcsr() & kFlushBits) == kFlushBits;
    mode.x87Precision = (X87ControlWord() >> 8) & 3u;
#elif defined(__aarch64__)
    mode.flushToZero = (Fpcr() & kFlushBit) != 0;
#endif
    return mode;
}

// Distinct modes for the tasks of one test; the default one is left to the threads.
const std::vector<Mode> kTaskModes = {
    {FE_UPWARD, true, 0},
    {FE_DOWNWARD, false, 2},
    {FE_TOWARDZERO, true, 3},
    {FE_UPWARD, false, 2},
};

// Restores the calling thread's default state when a test ends, however it ends.
struct DefaultModeAtExit
{
    ~DefaultModeAtExit() { Apply(Mode{}); }
};

// Counts, across tasks, the checks made and the ones that found another mode than their own
// (a Catch2 assertion is not made from a worker thread).
struct Checks
{
    std::atomic<long> made{0};
    std::atomic<long> wrong{0};
    std::string firstWrong; // written by the first wrong check only

    void Expect(const Mode& expected, const char* where)
    {
        made.fetch_add(1, std::memory_order_relaxed);
        const Mode found = Current();
        if (found != expected && wrong.fetch_add(1) == 0)
            firstWrong = std::string(where) + ": expected " + Describe(expected) + ", found " +
                         Describe(found);
    }
};

// Starts one task per entry of kTaskModes, appending their handles to `tasks`: each expects
// `startMode` when it starts, then sets its own mode and, if it `yields`, yields once and
// expects its own mode back.
void StartModeTasks(Scheduler& scheduler, const Mode& startMode, bool yields, Checks& checks,
                    std::vector<JoinHandle>& tasks)
{
    for (const Mode& mode : kTaskModes)
        tasks.push_back(scheduler.Start(
            [&checks, startMode, mode, yields]
            {
                checks.Expect(startMode,
                              yields ? "a yielding task at its start" : "a task at its start");
                Apply(mode);
                if (!yields)
                    return;
                YieldTask();
                checks.Expect(mode, "a yielding task after its yield");
            }));
}

SchedulerOptions Workers(unsigned count, const Mode& workerMode)
{
    SchedulerOptions options;
    options.workerCount = count;
    options.name = "fpu";
    options.hooks.threadStart = [workerMode](unsigned) { Apply(workerMode); };
    return options;
}
} // namespace

TEST_CASE("Each task keeps its own floating-point control state across yields and suspensions",
          "[fpu]")
{
    DefaultModeAtExit restore;
    Checks checks;
    const long rounds = TestSupport::Scaled(20'000);
    SECTION("tasks yielding to each other on one worker")
    {
        Scheduler scheduler(Workers(1, Mode{}));
        std::vector<JoinHandle> tasks;
        for (const Mode& mode : kTaskModes)
            tasks.push_back(scheduler.Start(
                [&, mode]
                {
                    Apply(mode);
                    for (long i = 0; i < rounds; ++i)
                    {
                        YieldTask();
                        checks.Expect(mode, "after a yield");
                    }
                }));
        for (JoinHandle& task : tasks)
            task.Join();
    }
    SECTION("tasks yielding on two workers, moving between them")
    {
        Scheduler scheduler(Workers(2, Mode{}));
        std::vector<JoinHandle> tasks;
        std::atomic<long> moves{0};
        for (const Mode& mode : kTaskModes)
            tasks.push_back(scheduler.Start(
                [&, mode]
                {
                    Apply(mode);
                    std::thread::id thread = std::this_thread::get_id();
                    for (long i = 0; i < rounds; ++i)
                    {
                        YieldTask();
                        checks.Expect(mode, "after a yield on two workers");
                        if (std::this_thread::get_id() != thread)
                        {
                            thread = std::this_thread::get_id();
                            moves.fetch_add(1, std::memory_order_relaxed);
                        }
                    }
                }));
        for (JoinHandle& task : tasks)
            task.Join();
        INFO("tasks resumed on another thread than the one before: " << moves.load());
    }
    SECTION("two tasks handing a value back and forth through the seed's Mailbox")
    {
        TestSupport::Mailbox requests;
        TestSupport::Mailbox replies;
        Scheduler scheduler(Workers(1, Mode{}));
        JoinHandle server = scheduler.Start(
            [&]
            {
                Apply(kTaskModes[0]);
                for (int request; (request = requests.Take()) > 0;)
                {
                    checks.Expect(kTaskModes[0], "server, after a Take");
                    replies.Put(request);
                }
            });
        JoinHandle client = scheduler.Start(
            [&]
            {
                Apply(kTaskModes[1]);
                for (long i = 0; i < rounds; ++i)
                {
                    requests.Put(1);
                    (void)replies.Take();
                    checks.Expect(kTaskModes[1], "client, after a Take");
                }
                requests.Put(-1);
            });
        client.Join();
        server.Join();
    }
    INFO(checks.firstWrong);
    CHECK(checks.wrong.load() == 0);
    CHECK(checks.made.load() >= rounds);
    CHECK(Current() == Mode{}); // the test's own thread was never touched
}

TEST_CASE("Each task keeps its own control state while tasks raise and clear the exception "
          "flags between switches",
          "[fpu]")
{
    // The flags are status, not control: the x86-64 switch leaves them with the thread and loads
    // the other side's control bits only (Switch_x86_64_sysv.S), so here the flags differ at
    // almost every switch while the control bits must still follow each task.
    DefaultModeAtExit restore;
    Checks checks;
    const long rounds = TestSupport::Scaled(20'000);
    Scheduler scheduler(Workers(1, Mode{}));
    std::vector<JoinHandle> tasks;
    for (std::size_t index = 0; index < kTaskModes.size(); ++index)
        tasks.push_back(scheduler.Start(
            [&, index]
            {
                const Mode mode = kTaskModes[index];
                Apply(mode);
                volatile double numerator = 1.0;
                volatile double denominator = 3.0;
                for (long i = 0; i < rounds; ++i)
                {
                    if ((i + static_cast<long>(index)) % 2 == 0)
                        std::feclearexcept(FE_ALL_EXCEPT);
                    else
                        denominator = numerator / denominator; // inexact: raises FE_INEXACT
                    YieldTask();
                    checks.Expect(mode, "after a yield, with the flags changed around it");
                }
            }));
    for (JoinHandle& task : tasks)
        task.Join();
    INFO(checks.firstWrong);
    CHECK(checks.wrong.load() == 0);
    CHECK(checks.made.load() == rounds * static_cast<long>(kTaskModes.size()));
}

TEST_CASE("A task starts with its worker thread's floating-point control state, not with what "
          "the task before it left",
          "[fpu]")
{
    DefaultModeAtExit restore;
    const Mode workerMode{FE_TOWARDZERO, true, 2}; // set by the threadStart hook
    Checks checks;
    std::atomic<bool> workerLoopModeKept{false};
    {
        SchedulerOptions options = Workers(1, workerMode);
        options.hooks.threadStop = [&](unsigned) { workerLoopModeKept = Current() == workerMode; };
        Scheduler scheduler(options);
        const long rounds = TestSupport::Scaled(2'000);
        for (long round = 0; round < rounds; ++round)
        {
            // Each leaves its own mode behind when it ends. Started back to back from one task,
            // each next one starts in place on the stack of the one that just ended; the yielding
            // one makes the next start on a fresh context through a switch instead.
            scheduler
                .Start(
                    [&]
                    {
                        std::vector<JoinHandle> batch;
                        StartModeTasks(scheduler, workerMode, false, checks, batch);
                        batch.push_back(scheduler.Start(
                            [&]
                            {
                                checks.Expect(workerMode, "a yielding task at its start");
                                Apply(kTaskModes[0]);
                                YieldTask();
                                checks.Expect(kTaskModes[0], "a yielding task after its yield");
                            }));
                        batch.push_back(scheduler.Start(
                            [&] { checks.Expect(workerMode, "a task started on a switch"); }));
                        for (JoinHandle& task : batch)
                            task.Join();
                    })
                .Join();
        }
        CHECK(checks.made.load() == rounds * static_cast<long>(kTaskModes.size() + 3));
    }
    INFO(checks.firstWrong);
    CHECK(checks.wrong.load() == 0);
    CHECK(workerLoopModeKept.load()); // the worker's own loop never saw a task's mode
}

TEST_CASE("A host-pumped task starts with the host thread's state of that turn, and the host "
          "keeps its own",
          "[fpu]")
{
    DefaultModeAtExit restore;
    SchedulerOptions options;
    options.workerCount = 0;
    options.name = "fpu-host";
    Scheduler scheduler(options);
    Checks checks;
    for (const Mode& hostMode : {Mode{FE_DOWNWARD, false, 2}, Mode{FE_TOWARDZERO, true, 0}})
    {
        Apply(hostMode);
        std::vector<JoinHandle> tasks;
        // The yielding ones start on fresh contexts through switches; each of the others starts
        // in place on the stack of the one before it, which left its own mode behind.
        StartModeTasks(scheduler, hostMode, true, checks, tasks);
        StartModeTasks(scheduler, hostMode, false, checks, tasks);
        scheduler.RunUntilIdle();
        CHECK(Current() == hostMode);
        for (JoinHandle& task : tasks)
        {
            CHECK(task.IsFinished());
            task.Join();
        }
    }
    INFO(checks.firstWrong);
    CHECK(checks.wrong.load() == 0);
    CHECK(checks.made.load() == 2 * 3 * static_cast<long>(kTaskModes.size()));
}
