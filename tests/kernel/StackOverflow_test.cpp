// The stack overflow report: a task whose frame lands in its guard region makes the process say
// which task overflowed, and with what stack and guard, before it dies with SIGSEGV; any other
// SIGSEGV goes to the handler installed before the report. Each case runs in a child process.
// This file is built without stack clash protection (where the compiler has it), as user code
// may be: the guard region's size alone must catch the frames below.

#include "DeathTest.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <csignal>
#include <cstddef>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TC_TEST_SANITIZED 1
#endif
#endif
#ifndef TC_TEST_SANITIZED
#define TC_TEST_SANITIZED 0
#endif

namespace
{
using Death = TestSupport::ChildResult;

// Died of the fault: SIGSEGV, or under a sanitizer whose own handler took the repeated fault, a
// failing exit after its report.
bool DiedOfTheFault(const Death& death)
{
    return death.signal == SIGSEGV || (TC_TEST_SANITIZED && death.exitCode > 0);
}

// A frame of `Bytes`, written from its lowest address up: without stack clash protection the
// first write lands `Bytes` below where the frame began. volatile: every write happens.
template <std::size_t Bytes>
[[gnu::noinline]] int WriteLargeFrame()
{
    volatile unsigned char frame[Bytes];
    for (std::size_t i = 0; i < Bytes; i += 256)
        frame[i] = static_cast<unsigned char>(i);
    return frame[Bytes / 2];
}

bool Contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// What the earlier handlers below saw.
void WriteText(const char* text)
{
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, text, std::strlen(text));
}
void* expectedFaultAddress = nullptr;
void EarlierInfoHandler(int, siginfo_t* info, void*)
{
    WriteText(info && info->si_addr == expectedFaultAddress ? "earlier handler: address ok\n"
                                                            : "earlier handler: address wrong\n");
    _exit(42);
}
void EarlierPlainHandler(int)
{
    WriteText("earlier plain handler\n");
    _exit(43);
}

// Writes to a page no stack owns.
void FaultOutsideAnyGuard()
{
    void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    expectedFaultAddress = page;
    *static_cast<volatile int*>(page) = 1;
}
} // namespace

TEST_CASE("A 74 KiB frame on a default task stack faults in the guard region, and the report "
          "names the task")
{
    // Default options: 64 KiB stacks, a 64 KiB guard region. A 74 KiB frame used to jump the
    // one guard page into the stack below and crash another task later.
    const Death death = TestSupport::RunInChild(
        []
        {
            TC::Scheduler scheduler(1);
            scheduler.Start([] { WriteLargeFrame<74 * 1024>(); }, {.name = "deep-frame"}).Join();
        });
    INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
    CHECK(DiedOfTheFault(death));
    CHECK(Contains(death.stderrText, "TC: stack overflow in task 'deep-frame' (stack 64 KiB, guard 64 KiB)"));
}

TEST_CASE("A host-pumped task's overflow is reported with its own stack and guard sizes")
{
    const Death death = TestSupport::RunInChild(
        []
        {
            TC::SchedulerOptions options;
            options.stackSize = 32 * 1024;
            options.stackGuardBytes = 128 * 1024;
            TC::Scheduler host(options);
            host.Start([] { WriteLargeFrame<120 * 1024>(); }, {.name = "host-frame"}).Detach();
            host.RunUntilIdle();
        });
    INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
    CHECK(DiedOfTheFault(death));
    CHECK(Contains(death.stderrText, "TC: stack overflow in task 'host-frame' (stack 32 KiB, guard 128 KiB)"));
}

TEST_CASE("A task's own stack size counts in the report, and a deep recursion lands in the guard")
{
    const Death death = TestSupport::RunInChild(
        []
        {
            TC::Scheduler scheduler(2);
            scheduler.Start([] { WriteLargeFrame<8 * 1024>(); }, {.name = "fits"}).Join();
            scheduler
                .Start([] { WriteLargeFrame<40 * 1024>(); }, {.name = "sized", .stackSize = 16 * 1024})
                .Join();
        });
    INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
    CHECK(DiedOfTheFault(death));
    CHECK(Contains(death.stderrText, "TC: stack overflow in task 'sized' (stack 16 KiB, guard 64 KiB)"));
    CHECK_FALSE(Contains(death.stderrText, "'fits'"));
}

TEST_CASE("With the report off, an overflow dies with a bare SIGSEGV")
{
    const Death death = TestSupport::RunInChild(
        []
        {
            TC::SetStackOverflowReport(false);
            TC::Scheduler scheduler(1);
            scheduler.Start([] { WriteLargeFrame<74 * 1024>(); }, {.name = "unreported"}).Join();
        });
    INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
    CHECK(DiedOfTheFault(death));
    CHECK_FALSE(Contains(death.stderrText, "stack overflow in task"));
}

TEST_CASE("A SIGSEGV outside any guard region goes to the handler installed before the report")
{
    // The children inherit this process's record that the report was installed once, so a
    // Scheduler would leave their own handler alone (a handler installed after the report is
    // taken as meant to replace it); SetStackOverflowReport(true) installs the report at once
    // over it, as a fresh process's first Scheduler would.
    SECTION("an SA_SIGINFO handler gets the fault, with its address")
    {
        const Death death = TestSupport::RunInChild(
            []
            {
                struct sigaction earlier {};
                earlier.sa_sigaction = &EarlierInfoHandler;
                earlier.sa_flags = SA_SIGINFO;
                sigemptyset(&earlier.sa_mask);
                sigaction(SIGSEGV, &earlier, nullptr);
                TC::SetStackOverflowReport(true);
                TC::Scheduler scheduler(1);
                scheduler.Start([] { FaultOutsideAnyGuard(); }, {.name = "wild-write"}).Join();
            });
        INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
        CHECK(death.exitCode == 42);
        CHECK(Contains(death.stderrText, "earlier handler: address ok"));
        CHECK_FALSE(Contains(death.stderrText, "stack overflow"));
    }
    SECTION("a plain handler gets the fault")
    {
        const Death death = TestSupport::RunInChild(
            []
            {
                std::signal(SIGSEGV, &EarlierPlainHandler);
                TC::SetStackOverflowReport(true);
                TC::Scheduler scheduler(1);
                scheduler.Start([] { FaultOutsideAnyGuard(); }, {.name = "wild-write"}).Join();
            });
        INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
        CHECK(death.exitCode == 43);
        CHECK(Contains(death.stderrText, "earlier plain handler"));
        CHECK_FALSE(Contains(death.stderrText, "stack overflow"));
    }
    SECTION("an overflow is reported first, then the earlier handler gets the repeated fault")
    {
        const Death death = TestSupport::RunInChild(
            []
            {
                std::signal(SIGSEGV, &EarlierPlainHandler);
                TC::SetStackOverflowReport(true);
                TC::Scheduler scheduler(1);
                scheduler.Start([] { WriteLargeFrame<74 * 1024>(); }, {.name = "deep-frame"}).Join();
            });
        INFO("child stderr: " << death.stderrText << " signal " << death.signal << " exit " << death.exitCode);
        CHECK(death.exitCode == 43);
        const std::size_t report = death.stderrText.find("TC: stack overflow in task 'deep-frame'");
        const std::size_t earlier = death.stderrText.find("earlier plain handler");
        REQUIRE(report != std::string::npos);
        REQUIRE(earlier != std::string::npos);
        CHECK(report < earlier);
    }
}
