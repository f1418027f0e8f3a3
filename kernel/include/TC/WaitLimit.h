#pragma once
// WaitLimit: the calling thread's waits run only hosted work of a priority or above.
//   { TC::WaitLimit limit(TC::Priority::High); frame.Join(); } // Normal, Low stay queued

#include <TC/Scheduler.h>
#include <TC/detail/Export.h>

namespace TC
{
/// - While it lives, this thread's waits run only its hosts' work of `lowest` or above. What
///   they wait for must be too, or run on workers: else they wait for ever.
/// - No effect on a task's waits (they run nothing). Nests. Past Low: std::invalid_argument.
class TC_API WaitLimit
{
public:
    explicit WaitLimit(Priority lowest);
    ~WaitLimit();
    WaitLimit(const WaitLimit&) = delete;
    WaitLimit& operator=(const WaitLimit&) = delete;

private:
    Priority previous_;
};
} // namespace TC
