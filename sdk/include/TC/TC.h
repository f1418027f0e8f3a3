#pragma once
// <TC/TC.h>: all of ConcurrentTasks in one include (Core, Synchronization, Strands); tests include
// <TC/Testing.h> separately.

#include <TC/Core.h>
#if __has_include(<TC/Synchronization.h>)
#include <TC/Synchronization.h>
#endif
#include <TC/Strands.h>
