#pragma once
// Duration: a timed wait's limit in nanoseconds, or "no limit".

#include <chrono>
#include <cstdint>
#include <limits>

namespace TC
{
// Built implicitly from any std::chrono::duration. Zero or negative: expired (the waiter is still
// published, then times out at once unless resumed).
class Duration
{
public:
    constexpr Duration() noexcept = default;

    template <class Rep, class Period>
    constexpr Duration(std::chrono::duration<Rep, Period> d) noexcept // NOLINT: implicit by design
        : nanoseconds_(Clamp(d))
    {
    }

    static constexpr Duration Infinite() noexcept { return FromNanoseconds(kInfinite); }
    // No deadline, yet a timed wait: it ends early on a stop request (TaskStop.h); Infinite()
    // waits as the untimed form does.
    static constexpr Duration UntilStopped() noexcept { return FromNanoseconds(kInfinite - 1); }
    static constexpr Duration Zero() noexcept { return FromNanoseconds(0); }
    static constexpr Duration FromNanoseconds(std::int64_t ns) noexcept
    {
        Duration d;
        d.nanoseconds_ = ns < 0 ? 0 : ns;
        return d;
    }

    constexpr bool IsInfinite() const noexcept { return nanoseconds_ == kInfinite; }
    constexpr std::int64_t Nanoseconds() const noexcept { return nanoseconds_; }
    constexpr std::chrono::nanoseconds ToChrono() const noexcept
    {
        return std::chrono::nanoseconds(nanoseconds_);
    }

    friend constexpr bool operator==(Duration, Duration) noexcept = default;
    friend constexpr auto operator<=>(Duration, Duration) noexcept = default;

private:
    static constexpr std::int64_t kInfinite = std::numeric_limits<std::int64_t>::max();

    template <class Rep, class Period>
    static constexpr std::int64_t Clamp(std::chrono::duration<Rep, Period> d) noexcept
    {
        using Wide = std::chrono::duration<long double, std::nano>;
        const long double ns = std::chrono::duration_cast<Wide>(d).count();
        if (ns <= 0)
            return 0;
        if (ns >= static_cast<long double>(kInfinite))
            return kInfinite;
        return static_cast<std::int64_t>(ns);
    }

    std::int64_t nanoseconds_ = 0;
};
} // namespace TC
