// WaitLimit: the lowest priority the calling thread's waits run on its hosts (ThreadState).

#include "SchedulerInternals.h"

#include <TC/WaitLimit.h>

#include <stdexcept>
#include <string>

namespace TC
{
WaitLimit::WaitLimit(Priority lowest) : previous_(detail::CurrentThread().waitLowest)
{
    if (detail::PriorityIndex(lowest) >= kPriorityCount)
        throw std::invalid_argument("TC::WaitLimit: Priority " +
                                    std::to_string(detail::PriorityIndex(lowest)) +
                                    " is not a level (Critical, High, Normal, Low)");
    detail::CurrentThread().waitLowest = lowest;
}

WaitLimit::~WaitLimit()
{
    detail::CurrentThread().waitLowest = previous_;
}
} // namespace TC
