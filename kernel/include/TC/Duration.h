#pragma once
// Duration: how long a timed wait may last, in nanoseconds, with one value meaning "no limit".

#include <chrono>
#include <cstdint>
#include <limits>

namespace TC
{
// A wait's time limit. Built implicitly from any std::chrono::duration; Duration::Infinite means
// no limit. Zero and negative durations both mean "already expired": a timed wait with either
// still publishes its waiter and then times out at once unless it was resumed first.
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
