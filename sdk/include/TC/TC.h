#pragma once
// <TC/TC.h>: Core, Synchronization and Strands in one include (<TC/Testing.h> apart).

#include <TC/Core.h>
#if __has_include(<TC/Synchronization.h>)
#include <TC/Synchronization.h>
#endif
#include <TC/Strands.h>
