#pragma once
// CoroutineIdentity, and the zone a scheduler opens around a coroutine resumption it runs
// (SchedulerHooks::coroutineEnter/coroutineLeave). Users include <TC/Scheduler.h>.

#include <TC/detail/Export.h>

#include <concepts>
#include <coroutine>
#include <cstdint>
#include <type_traits>

namespace TC
{
// A coroutine chain's id (0 until first needed) and name (nullptr: "coroutine"), kept by a
// promise's Identity(); a Task's awaited tasks copy it.
struct CoroutineIdentity
{
    std::uint64_t id = 0;
    const char* name = nullptr;
};

namespace detail
{
// Entered (coroutineEnter) when the resumed code's awaiter names its chain, before the body
// runs; left when the resume returns.
struct CoroutineZone
{
    const void* scheduler; // the SchedulerCore whose hooks it calls
    CoroutineZone* outer;
    CoroutineIdentity identity;
    bool entered;
};

// The innermost open zone on this thread: null unless hooks are set, so a check is one load.
TC_API extern constinit thread_local CoroutineZone* openCoroutineZone;

// Enters `zone` as `identity` (nullptr: a fresh id, "coroutine"), giving it an id if it has none.
TC_API void EnterCoroutineZone(CoroutineZone& zone, CoroutineIdentity* identity) noexcept;
TC_API void CloseCoroutineZone(CoroutineZone& zone) noexcept;

// The promise's `CoroutineIdentity& Identity()`, or nullptr.
template <class Promise>
CoroutineIdentity* IdentityOfPromise(std::coroutine_handle<Promise> handle) noexcept
{
    if constexpr (std::is_void_v<Promise>)
        return nullptr;
    else if constexpr (requires(Promise& p) { { p.Identity() } -> std::same_as<CoroutineIdentity&>; })
        return &handle.promise().Identity();
    else
        return nullptr;
}

// Called by an awaiter as its coroutine resumes.
inline void IdentifyCoroutine(CoroutineIdentity* identity) noexcept
{
    if (CoroutineZone* zone = openCoroutineZone) [[unlikely]]
        if (!zone->entered)
            EnterCoroutineZone(*zone, identity);
}

// A resumption run inside another's zone (a strand's pump): its own zone, with the same hooks.
class CoroutineResumption
{
public:
    CoroutineResumption() noexcept
    {
        if (CoroutineZone* outer = openCoroutineZone) [[unlikely]]
        {
            zone_ = {outer->scheduler, outer, {}, false};
            openCoroutineZone = &zone_;
        }
    }
    ~CoroutineResumption()
    {
        if (zone_.outer) [[unlikely]]
            CloseCoroutineZone(zone_);
    }
    CoroutineResumption(const CoroutineResumption&) = delete;
    CoroutineResumption& operator=(const CoroutineResumption&) = delete;

private:
    CoroutineZone zone_{nullptr, nullptr, {}, false};
};

// Never 0 nor reused: per-thread batches of a shared counter (one RMW per batch).
TC_API std::uint64_t NextUniqueId() noexcept;
} // namespace detail
} // namespace TC
