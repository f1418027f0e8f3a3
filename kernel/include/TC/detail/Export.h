#pragma once
// TC_API: what the libraries export. They are built with hidden symbol visibility, so a shared
// build exports only the classes, functions and variables of the public headers marked with it.

#if defined(__GNUC__) || defined(__clang__)
#define TC_API [[gnu::visibility("default")]]
#else
#define TC_API
#endif
