#pragma once
// <TC/Core.h>: the kernel: suspend protocol, schedulers, timers, converted threads, executors,
// intrusive stacks.

#include <TC/BasicStack.h>
#include <TC/Checked.h>
#include <TC/ConcurrentStack.h>
#include <TC/Diagnostics.h>
#include <TC/Duration.h>
#include <TC/Executor.h>
#include <TC/ISuspendCallback.h>
#include <TC/JobGraph.h>
#include <TC/ParallelFor.h>
#include <TC/Scheduler.h>
#include <TC/BlockAllocator.h>
#include <TC/StackAllocator.h>
#include <TC/Suspend.h>
#include <TC/SuspendAsync.h>
#include <TC/SuspendedTask.h>
#include <TC/TaskStop.h>
#include <TC/WaitLimit.h>
