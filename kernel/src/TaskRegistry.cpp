// The registry of scheduler cores, their task blocks and the threads that wait (TaskRegistry.h).

#include "TaskRegistry.h"

#include "Task.h"
#include "ThreadState.h"

#include <atomic>
#include <new>
#include <pthread.h>
#include <unistd.h>

namespace TC::detail
{
CoreRecord* coreRegistry = nullptr;
ThreadState* threadRegistry = nullptr;

namespace
{
std::atomic<std::uint64_t> nextBlockId{1};
} // namespace

std::mutex& RegistryLock() noexcept
{
    static std::mutex lock;
    return lock;
}

void RegisterCore(CoreRecord& record) noexcept
{
    std::lock_guard guard(RegistryLock());
    record.prev = nullptr;
    record.next = coreRegistry;
    if (coreRegistry)
        coreRegistry->prev = &record;
    coreRegistry = &record;
}

void UnregisterCore(CoreRecord& record) noexcept
{
    std::lock_guard guard(RegistryLock());
    if (record.prev)
        record.prev->next = record.next;
    else if (coreRegistry == &record)
        coreRegistry = record.next;
    if (record.next)
        record.next->prev = record.prev;
    record.prev = record.next = nullptr;
}

BlockRecord& RecordOf(void* block) noexcept
{
    return *std::launder(reinterpret_cast<BlockRecord*>(static_cast<unsigned char*>(block) + kTaskBlockSize));
}

namespace
{
void Link(CoreRecord& record, BlockRecord& entry) noexcept
{
    std::lock_guard guard(record.lock);
    entry.prev = nullptr;
    entry.next = record.blocks;
    if (record.blocks)
        record.blocks->prev = &entry;
    record.blocks = &entry;
}
} // namespace

void RegisterBlock(CoreRecord& record, void* block) noexcept
{
    // Free until a task is constructed in it (the Task's runState starts as Queued).
    auto* task = static_cast<Task*>(block);
    SetRunStateBeforeFree(*task);
    auto* entry = ::new (static_cast<unsigned char*>(block) + kTaskBlockSize) BlockRecord;
    entry->task = task;
    entry->id = nextBlockId.fetch_add(1, std::memory_order_relaxed);
    Link(record, *entry);
}

void UnregisterBlock(CoreRecord& record, void* block) noexcept
{
    BlockRecord& entry = RecordOf(block);
    std::lock_guard guard(record.lock);
    if (entry.prev)
        entry.prev->next = entry.next;
    else if (record.blocks == &entry)
        record.blocks = entry.next;
    if (entry.next)
        entry.next->prev = entry.prev;
    entry.prev = entry.next = nullptr;
}

namespace
{
// Takes the thread's state out of the list when the thread exits.
struct ListedThreadExit
{
    ThreadState* thread = nullptr;
    ~ListedThreadExit()
    {
        if (!thread)
            return;
        std::lock_guard guard(RegistryLock());
        if (thread->prevListed)
            thread->prevListed->nextListed = thread->nextListed;
        else if (threadRegistry == thread)
            threadRegistry = thread->nextListed;
        if (thread->nextListed)
            thread->nextListed->prevListed = thread->prevListed;
        thread->prevListed = thread->nextListed = nullptr;
        thread->listed = false;
    }
};
thread_local ListedThreadExit listedThreadExit;
} // namespace

void ListThread(ThreadState& thread) noexcept
{
    thread.osThreadId = static_cast<int>(gettid());
    thread.handle = static_cast<unsigned long>(pthread_self());
    listedThreadExit.thread = &thread;
    std::lock_guard guard(RegistryLock());
    thread.prevListed = nullptr;
    thread.nextListed = threadRegistry;
    if (threadRegistry)
        threadRegistry->prevListed = &thread;
    threadRegistry = &thread;
    thread.listed = true;
}
} // namespace TC::detail
