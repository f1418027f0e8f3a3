#pragma once
// StopToken, StopSource, StopCallback and NoStopState: the vocabulary of cooperative
// cancellation, which are the standard library's own (GCC 12 and Clang 14 with libstdc++ have
// <stop_token>), so a token crosses into and out of any std code unchanged.

#include <stop_token>

namespace TC
{
// request_stop() returns true exactly once, and that call runs every registered callback once,
// on the requesting thread, before it returns. A callback constructed on a stopped token runs in
// its constructor. ~StopCallback waits while its callback runs on another thread, but not when it
// is called from inside that callback. Copies share state.
using StopToken = std::stop_token;
using StopSource = std::stop_source;
template <class F>
using StopCallback = std::stop_callback<F>;
inline constexpr std::nostopstate_t NoStopState = std::nostopstate;
} // namespace TC
