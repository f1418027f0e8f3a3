#pragma once
// FrameStats: what a game loop reports about itself -- frame-time percentiles, how far each
// RunFor turn ran past its budget, and the process's resident memory.

#include <TC/Scheduler.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <unistd.h>
#include <vector>

// The value below which a fraction p of `samples` lies (nearest rank).
inline double Percentile(std::vector<double> samples, double p)
{
    if (samples.empty())
        return 0.0;
    std::sort(samples.begin(), samples.end());
    const auto index = static_cast<std::size_t>(p * static_cast<double>(samples.size() - 1) + 0.5);
    return samples[std::min(index, samples.size() - 1)];
}

// Resident set size in bytes (Linux: /proc/self/statm), or 0 where it cannot be read.
inline std::size_t ResidentBytes()
{
    std::FILE* file = std::fopen("/proc/self/statm", "r");
    if (!file)
        return 0;
    unsigned long pages = 0;
    unsigned long resident = 0;
    const int read = std::fscanf(file, "%lu %lu", &pages, &resident);
    std::fclose(file);
    return read == 2 ? static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE))
                     : 0;
}

// [guide:overrun]
// RunFor with a stopwatch: how far each turn ran past its budget, in microseconds. RunFor checks
// the clock between items, so a turn overruns by at most the one item it was running.
class MeteredPump
{
public:
    explicit MeteredPump(TC::Scheduler& host) : host_(host) { overrunsUs_.reserve(1 << 16); }

    TC::PumpResult RunFor(TC::Duration budget, TC::Priority lowest)
    {
        const auto start = std::chrono::steady_clock::now();
        const TC::PumpResult result = host_.RunFor(budget, lowest);
        const auto spent = std::chrono::steady_clock::now() - start;
        if (result.ran != 0)
            overrunsUs_.push_back(
                std::max(0.0, std::chrono::duration<double, std::micro>(spent - budget.ToChrono()).count()));
        return result;
    }

    // Turns that ran something, and their overruns.
    const std::vector<double>& OverrunsUs() const noexcept { return overrunsUs_; }

private:
    TC::Scheduler& host_;
    std::vector<double> overrunsUs_;
};
// [/guide:overrun]
