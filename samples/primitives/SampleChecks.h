#pragma once
// What the many-waiters samples share: a check any thread may make, the test kit run in both its
// modes over a scenario, and the verdict that becomes the exit status.

#include <TC/Testing.h>

#include <atomic>
#include <cstdio>

namespace Samples
{
inline std::atomic<bool> ok{true}; // checks run on several threads

inline void Expect(bool condition, const char* what)
{
    if (!condition)
    {
        std::printf("check failed: %s\n", what);
        ok = false;
    }
}

// 100 deterministic runs with every kind of waiter, then 20 stress runs; both must pass.
inline void RunTestKit(const TC::Testing::Scenario& scenario)
{
    TC::Testing::StressOptions options;
    const TC::Testing::Summary deterministic = TC::Testing::Stress(options, scenario);
    std::printf("test kit, deterministic: %s", deterministic.Describe().c_str());
    options.mode = TC::Testing::Mode::Stress;
    options.runs = 20;
    const TC::Testing::Summary stress = TC::Testing::Stress(options, scenario);
    std::printf("test kit, stress: %s", stress.Describe().c_str());
    Expect(deterministic.Passed() && stress.Passed(), "the test kit passes every run");
}

// Prints OK or FAILED; returns the exit status.
inline int Verdict()
{
    std::printf("%s\n", ok.load() ? "OK" : "FAILED");
    return ok.load() ? 0 : 1;
}
} // namespace Samples
