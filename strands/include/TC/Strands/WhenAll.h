#pragma once
// WhenAll: start every Task<void> and resume the awaiting coroutine once all have finished.

#include <TC/Strands/detail/Join.h>

#include <type_traits>
#include <vector>

namespace TC
{
// co_await WhenAll(std::move(a), std::move(b), ...): each child inherits the awaiting
// coroutine's stop token and unowned root. It does not cancel siblings when one throws: the
// first escape -- a cancellation included -- is rethrown once every child has finished. Children
// run on whatever resumes them; the awaiting coroutine resumes on the thread of the last one to
// finish (symmetric transfer), or inline if all finished while starting. A child whose executor
// drops its resumption (a closed strand) is freed alone, so siblings parked elsewhere stay valid;
// the awaiting coroutine then never resumes, and its unowned chain is freed from its root once
// every other child has finished or been dropped too.
template <class... Tasks>
    requires(std::is_same_v<Tasks, Task<void>> && ...)
detail::JoinAwaiter<detail::JoinMode::All> WhenAll(Tasks&&... tasks)
{
    return detail::JoinAwaiter<detail::JoinMode::All>(detail::CollectTasks(std::move(tasks)...));
}

inline detail::JoinAwaiter<detail::JoinMode::All> WhenAll(std::vector<Task<void>> tasks)
{
    return detail::JoinAwaiter<detail::JoinMode::All>(std::move(tasks));
}
} // namespace TC
