#pragma once
// WhenAny: race Task<void>s; the first to complete wins and stops the others.

#include <TC/Strands/detail/Join.h>

#include <type_traits>
#include <vector>

namespace TC
{
// co_await WhenAny(std::move(a), std::move(b), ...) yields std::optional<std::size_t>: the index
// of the first child to complete, or std::nullopt where none did (an empty input, or every child
// unwound cancelled). The winner requests stop on a source shared by the others, which must
// unwind on OperationCancelled (a child that swallows its cancellation and returns has, as far as
// the race can tell, completed). The awaiting coroutine resumes only once every child finished.
// Cancelling the awaiting flow's token cancels every child, and WhenAny then throws
// OperationCancelled -- but only if no child completed first: a completion beats a later cancel.
// A child failing (any other exception) before any completion also settles the race: the others
// are stopped and that exception is rethrown once all finished. A child whose executor drops its
// resumption (a closed strand) is freed alone and stops the others; the awaiting coroutine then
// never resumes, and its unowned chain is freed from its root once every child has finished or
// been dropped.
template <class... Tasks>
    requires(std::is_same_v<Tasks, Task<void>> && ...)
detail::JoinAwaiter<detail::JoinMode::Any> WhenAny(Tasks&&... tasks)
{
    return detail::JoinAwaiter<detail::JoinMode::Any>(detail::CollectTasks(std::move(tasks)...));
}

inline detail::JoinAwaiter<detail::JoinMode::Any> WhenAny(std::vector<Task<void>> tasks)
{
    return detail::JoinAwaiter<detail::JoinMode::Any>(std::move(tasks));
}
} // namespace TC
