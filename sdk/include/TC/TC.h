#pragma once
// <TC/TC.h>: all of ConcurrentTasks in one include -- the kernel (<TC/Core.h>), the
// synchronization primitives (<TC/Synchronization.h>) and coroutines and strands
// (<TC/Strands.h>). The test kit stays separate: include <TC/Testing.h> in tests.

#include <TC/Core.h>
#if __has_include(<TC/Synchronization.h>)
#include <TC/Synchronization.h>
#endif
#include <TC/Strands.h>
