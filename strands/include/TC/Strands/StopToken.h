#pragma once
// StopToken, StopSource, StopCallback and NoStopState: cooperative cancellation, the standard
// library's own types, so a token crosses into and out of std code unchanged.

#include <stop_token>

namespace TC::Strands
{
// request_stop() is true once, running every callback once on the requester before it returns; a
// callback made on a stopped token runs in its constructor. ~StopCallback waits for its callback
// running elsewhere (not from inside it). Copies share state.
using StopToken = std::stop_token;
using StopSource = std::stop_source;
template <class F>
using StopCallback = std::stop_callback<F>;
inline constexpr std::nostopstate_t NoStopState = std::nostopstate;
} // namespace TC::Strands
