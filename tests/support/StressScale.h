#pragma once
// StressScale: how every suite sizes its stress tests. A suite's count is its base count times the
// build's factor (the suite's own: smaller in Debug and under sanitizers) times TC_STRESS_SCALE.

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace TCStress
{
// The TC_STRESS_SCALE multiplier: 1 when unset, else a positive number (0.2 a fifth, 10 ten times).
// Anything else ends the test program with a message, so that a typo does not quietly run a
// suite at its default size (or at none).
inline double FromEnvironment()
{
    static const double scale = []
    {
        const char* text = std::getenv("TC_STRESS_SCALE");
        if (text == nullptr || *text == '\0')
            return 1.0;
        char* end = nullptr;
        const double value = std::strtod(text, &end);
        if (end == text || *end != '\0' || !(value > 0) || value > 1e6)
        {
            std::fprintf(stderr,
                         "TC_STRESS_SCALE='%s': expected a positive number (0.2 runs a fifth of "
                         "every stress test, 10 ten times as much)\n",
                         text);
            std::exit(2);
        }
        return value;
    }();
    return scale;
}

// `count` times `buildFactor` times FromEnvironment(), clamped to [least, most].
template <class Int>
Int Scale(Int count, double buildFactor, Int least, Int most)
{
    const double scaled = static_cast<double>(count) * buildFactor * FromEnvironment();
    if (!(scaled >= static_cast<double>(least)))
        return least;
    return scaled >= static_cast<double>(most) ? most : static_cast<Int>(scaled);
}
} // namespace TCStress
