#pragma once
// Stop tokens of stackful tasks and converted threads; a stop ends their timed waits.
//   options.stopToken = source.get_token();  // TaskOptions, for scheduler.Start
//   if (!event.Wait(TC::Duration::UntilStopped()) && TC::StopRequested()) return;

#include <TC/detail/Export.h>

#include <stop_token>

namespace TC
{
namespace detail
{
struct TaskIdentity;
}

// The calling task's or thread's token (TaskOptions::stopToken, innermost StopScope) or none.
TC_API std::stop_token GetStopToken() noexcept;

// GetStopToken().stop_requested().
TC_API bool StopRequested() noexcept;

// Gives the calling task or thread `token` until the scope ends, then the one it had before.
/// - Destroy it on the task or thread that made it, innermost first: else checked mode fails
///   "StopScope left on another waiter".
/// - Not on a worker outside a task (coroutines: Strands tokens): "StopScope outside a task".
class TC_API StopScope
{
public:
    explicit StopScope(std::stop_token token) noexcept;
    ~StopScope();
    StopScope(const StopScope&) = delete;
    StopScope& operator=(const StopScope&) = delete;

private:
    std::stop_token token_;
    const std::stop_token* previous_ = nullptr;
    detail::TaskIdentity* owner_ = nullptr;
};
} // namespace TC
