// Checked mode's reporting: one message naming the rule, then abort.

#include <TC/Checked.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace TC
{
namespace
{
std::atomic<RuleViolationHandler> handler{nullptr};
}

void ReportRuleViolation(const char* rule, const char* detail) noexcept
{
    std::fprintf(stderr, "TC checked mode: %s: %s\n", rule, detail);
    std::fflush(stderr);
    if (RuleViolationHandler h = handler.load(std::memory_order_acquire))
        h(rule, detail);
    std::abort();
}

RuleViolationHandler SetRuleViolationHandler(RuleViolationHandler newHandler) noexcept
{
    return handler.exchange(newHandler, std::memory_order_acq_rel);
}

bool IsCheckedBuild() noexcept
{
    return TC_CHECKED != 0;
}
} // namespace TC
