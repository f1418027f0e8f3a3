#pragma once
// TC_API: marks what the libraries (built with hidden visibility) export.

#if defined(__GNUC__) || defined(__clang__)
#define TC_API [[gnu::visibility("default")]]
#else
#define TC_API
#endif
