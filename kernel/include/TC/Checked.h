#pragma once
// Checked mode: TC_CHECKED turns every rule of the primitive checklist that can be detected at
// run time into an immediate failure that names the rule. On in Debug builds of the library.

#include <TC/detail/Export.h>

#ifndef TC_CHECKED
#define TC_CHECKED 0
#endif

namespace TC
{
// Called when a rule is broken: prints "TC checked mode: <rule>: <detail>" to stderr and aborts.
// Tests replace the reaction with SetRuleViolationHandler to observe it without dying.
[[noreturn]] TC_API void ReportRuleViolation(const char* rule, const char* detail) noexcept;

using RuleViolationHandler = void (*)(const char* rule, const char* detail);

// Installs a handler that runs after the message is printed and before the abort (a test may use
// it to flush its own log); returns the previous one. nullptr restores the default.
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
