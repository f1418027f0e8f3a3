#pragma once
// <TC/Synchronization.h>: the synchronization layer -- the building blocks for primitives
// (SuspensionKind, SuspendableBase, Suspendable, Waitable) and the library's primitives.

#include <TC/Synchronization/AutoResetEvent.h>
#include <TC/Synchronization/AutoResetEvent_s.h>
#include <TC/Synchronization/Barrier.h>
#include <TC/Synchronization/Channel.h>
#include <TC/Synchronization/ConditionVariable.h>
#include <TC/Synchronization/Future.h>
#include <TC/Synchronization/Latch.h>
#include <TC/Synchronization/Mailbox.h>
#include <TC/Synchronization/ManualResetEvent.h>
#include <TC/Synchronization/ManualResetEvent_s.h>
#include <TC/Synchronization/Mutex.h>
#include <TC/Synchronization/Semaphore.h>
#include <TC/Synchronization/Suspendable.h>
#include <TC/Synchronization/SuspendableBase.h>
#include <TC/Synchronization/SuspensionKind.h>
#include <TC/Synchronization/WaitGroup.h>
#include <TC/Synchronization/WaitQueue.h>
#include <TC/Synchronization/Waitable.h>
