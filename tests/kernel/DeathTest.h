#pragma once
// Runs a body in a child process and reports how it ended and what it printed to stderr, so a
// test can assert that checked mode failed with the right message.

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace TestSupport
{
struct ChildResult
{
    bool aborted = false; // ended by a signal (checked mode aborts)
    int signal = 0;       // that signal, or 0
    int exitCode = -1;
    std::string stderrText;
};

template <class Body>
ChildResult RunInChild(Body body)
{
    int pipeFds[2];
    if (pipe(pipeFds) != 0)
        return {};
    const pid_t child = fork();
    if (child == 0)
    {
        close(pipeFds[0]);
        dup2(pipeFds[1], STDERR_FILENO);
        // The test runner's crash handlers are not async-signal-safe; the child dies plainly.
        for (int signalNumber : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE})
            std::signal(signalNumber, SIG_DFL);
        body();
        _exit(0);
    }
    close(pipeFds[1]);
    ChildResult result;
    char buffer[512];
    for (ssize_t n; (n = read(pipeFds[0], buffer, sizeof buffer)) > 0;)
        result.stderrText.append(buffer, static_cast<std::size_t>(n));
    close(pipeFds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    result.aborted = WIFSIGNALED(status);
    result.signal = result.aborted ? WTERMSIG(status) : 0;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// Requires that the child aborted with checked mode's message naming `rule`.
inline void RequireRule(const ChildResult& result, const char* rule)
{
    INFO("child stderr: " << result.stderrText);
    REQUIRE(result.aborted);
    REQUIRE(result.stderrText.find(std::string("TC checked mode: ") + rule) != std::string::npos);
}
} // namespace TestSupport
