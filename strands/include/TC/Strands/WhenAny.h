#pragma once
// WhenAny: race Task<void>s; the first to complete wins and stops the others.

#include <TC/Strands/detail/Join.h>

#include <type_traits>
#include <vector>

namespace TC::Strands
{
// co_await WhenAny(std::move(a), std::move(b), ...) yields the index of the first child to
// complete, or std::nullopt (empty input, or all unwound cancelled).
/// - The winner stops the others (they must unwind on OperationCancelled; one that returns counts
///   as completed); the awaiter resumes once every child finished.
/// - Cancelling the awaiting flow cancels every child; WhenAny throws OperationCancelled unless
///   a child completed first.
/// - A child failing before any completion stops the others; its exception is rethrown.
/// - A child whose resumption is dropped (closed strand) stops the others; the awaiter never
///   resumes and its unowned chain is freed once all finished or were dropped.
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
} // namespace TC::Strands
