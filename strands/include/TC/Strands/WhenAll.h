#pragma once
// WhenAll: start every Task<void>; resume the awaiter once all finished.

#include <TC/Strands/detail/Join.h>

#include <type_traits>
#include <vector>

namespace TC::Strands
{
// co_await WhenAll(std::move(a), std::move(b), ...): children inherit the stop token and unowned
// root; no sibling cancellation; the first escape is rethrown once all finished.
/// - The awaiter resumes on the last child's thread (inline if all finished while starting).
/// - A child whose resumption is dropped is freed alone; the awaiter never resumes and its chain
///   is freed once every other child finished or was dropped.
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
} // namespace TC::Strands
