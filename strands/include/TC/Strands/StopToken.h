#pragma once
// StopToken, StopSource, StopCallback, NoStopState: cooperative cancellation (the std types).

#include <stop_token>

namespace TC::Strands
{
// request_stop() is true once, running each callback once on the requester before returning; one
// made on a stopped token runs in its constructor. ~StopCallback waits for it running elsewhere.
using StopToken = std::stop_token;
using StopSource = std::stop_source;
template <class F>
using StopCallback = std::stop_callback<F>;
inline constexpr std::nostopstate_t NoStopState = std::nostopstate;
} // namespace TC::Strands
