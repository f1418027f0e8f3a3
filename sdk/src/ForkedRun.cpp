// The test kit's forked runs: the child runs the scenario and reports its Result through a
// pipe, one field per line; a crash or a hang kills only the child.

#include "RunState.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

namespace TC::Testing::detail
{
namespace
{
std::string Serialize(const Result& r)
{
    std::ostringstream out;
    out << "participants " << r.participants << "\ntasks " << r.tasks << "\nthreads " << r.threads
        << "\ncoroutines " << r.coroutines << "\nfinished " << r.finished << "\nlost "
        << r.lostWakeups << "\ndouble " << r.doubleResumes << "\nrules " << r.ruleViolations
        << "\nchecks " << r.failedChecks << "\nhung " << r.hung << "\ncrashed " << r.crashed
        << "\nracepoints " << r.racePoints << "\nperturbed " << r.perturbed << "\n";
    for (std::string line : r.report)
    {
        std::replace(line.begin(), line.end(), '\n', ' ');
        out << "report " << line << "\n";
    }
    out << "end\n";
    return out.str();
}

bool Deserialize(const std::string& text, Result& r)
{
    std::istringstream in(text);
    std::string key;
    while (in >> key)
    {
        if (key == "end")
            return true;
        if (key == "report")
        {
            std::string line;
            std::getline(in, line);
            r.report.push_back(line.empty() ? line : line.substr(1));
            continue;
        }
        std::size_t value = 0;
        in >> value;
        if (key == "participants")
            r.participants = value;
        else if (key == "tasks")
            r.tasks = value;
        else if (key == "threads")
            r.threads = value;
        else if (key == "coroutines")
            r.coroutines = value;
        else if (key == "finished")
            r.finished = value;
        else if (key == "lost")
            r.lostWakeups = value;
        else if (key == "double")
            r.doubleResumes = value;
        else if (key == "rules")
            r.ruleViolations = value;
        else if (key == "checks")
            r.failedChecks = value;
        else if (key == "hung")
            r.hung = value != 0;
        else if (key == "crashed")
            r.crashed = value != 0;
        else if (key == "racepoints")
            r.racePoints = value;
        else if (key == "perturbed")
            r.perturbed = value;
    }
    return false;
}

void WriteAll(int fd, const std::string& text) noexcept
{
    std::size_t done = 0;
    while (done < text.size())
    {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n <= 0)
            return;
        done += static_cast<std::size_t>(n);
    }
}

std::string ReadAll(int fd)
{
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    return text;
}
} // namespace

Result RunForked(std::uint64_t seed, const Scenario& scenario, const StressOptions& options)
{
    int errorPipe[2];
    int resultPipe[2];
    if (pipe(errorPipe) != 0)
        throw std::runtime_error("TC::Testing: pipe failed");
    if (pipe(resultPipe) != 0)
    {
        close(errorPipe[0]);
        close(errorPipe[1]);
        throw std::runtime_error("TC::Testing: pipe failed");
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    if (child < 0)
        throw std::runtime_error("TC::Testing: fork failed");
    if (child == 0)
    {
        close(errorPipe[0]);
        close(resultPipe[0]);
        dup2(errorPipe[1], STDERR_FILENO);
        // A test runner's crash handlers are not async-signal-safe: the child dies plainly.
        for (int signalNumber : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE})
            std::signal(signalNumber, SIG_DFL);
        Result result;
        try
        {
            result = RunInProcess(seed, scenario, options);
        }
        catch (const std::exception& error)
        {
            result.seed = seed;
            result.failedChecks = 1;
            result.report.push_back(std::string("the scenario threw: ") + error.what());
        }
        WriteAll(resultPipe[1], Serialize(result));
        std::fflush(stderr);
        _exit(0);
    }
    close(errorPipe[1]);
    close(resultPipe[1]);
    const std::string errors = ReadAll(errorPipe[0]);
    const std::string reported = ReadAll(resultPipe[0]);
    close(errorPipe[0]);
    close(resultPipe[0]);
    int status = 0;
    waitpid(child, &status, 0);

    Result result;
    const bool exitedCleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!(exitedCleanly && Deserialize(reported, result)))
    {
        result = Result{};
        if (errors.find("handle resumed twice") != std::string::npos)
            result.doubleResumes = 1;
        else if (errors.find("TC checked mode:") != std::string::npos ||
                 errors.find("TC::Testing: wait inside a callback") != std::string::npos)
            result.ruleViolations = 1;
        else
            result.crashed = true;
        result.report.push_back(
            WIFSIGNALED(status)
                ? "the child process died of signal " + std::to_string(WTERMSIG(status))
                : "the child process exited with status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1));
        std::istringstream lines(errors);
        std::size_t kept = 0;
        for (std::string line; std::getline(lines, line) && kept < 20; ++kept)
            result.report.push_back("  stderr: " + line);
    }
    result.seed = seed;
    result.mode = options.mode;
    return result;
}
} // namespace TC::Testing::detail
