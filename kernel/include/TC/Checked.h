#pragma once
// Checked mode: TC_CHECKED (on in Debug builds) fails at once, naming the rule, on every
// run-time-detectable break of the primitive checklist.

#include <TC/detail/Export.h>

#ifndef TC_CHECKED
#define TC_CHECKED 0
#endif

namespace TC
{
// Prints "TC checked mode: <rule>: <detail>" to stderr and aborts.
[[noreturn]] TC_API void ReportRuleViolation(const char* rule, const char* detail) noexcept;

using RuleViolationHandler = void (*)(const char* rule, const char* detail);

// Installs a handler run after the message, before the abort; returns the previous one.
// nullptr restores the default.
TC_API RuleViolationHandler SetRuleViolationHandler(RuleViolationHandler handler) noexcept;

// True when the library was built with checked mode.
TC_API bool IsCheckedBuild() noexcept;
} // namespace TC

#if TC_CHECKED
#define TC_CHECK(condition, rule, detail)                                                         \
    do                                                                                            \
    {                                                                                             \
        if (!(condition)) [[unlikely]]                                                            \
            ::TC::ReportRuleViolation(rule, detail);                                              \
    } while (false)
#else
#define TC_CHECK(condition, rule, detail)                                                         \
    do                                                                                            \
    {                                                                                             \
    } while (false)
#endif
