#pragma once
// <TC/Strands.h>: coroutines and strands over the suspend protocol (Task<T>, WhenAll/WhenAny,
// stop tokens, SyncRun, ResumeOn, Strand, KeyedStrands, AsyncQueue...), in namespace TC.

#include <TC/Strands/AsyncQueue.h>
#include <TC/Strands/Awaitable.h>
#include <TC/Strands/Cancellation.h>
#include <TC/Strands/DetachedTask.h>
#include <TC/Strands/FrameAllocator.h>
#include <TC/Strands/KeyedStrands.h>
#include <TC/Strands/ResumeOn.h>
#include <TC/Strands/ResumeTarget.h>
#include <TC/Strands/RunTask.h>
#include <TC/Strands/StopToken.h>
#include <TC/Strands/Strand.h>
#include <TC/Strands/StrandOptions.h>
#include <TC/Strands/SyncRun.h>
#include <TC/Strands/Task.h>
#include <TC/Strands/WhenAll.h>
#include <TC/Strands/WhenAny.h>
