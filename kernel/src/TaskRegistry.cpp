// The registry of scheduler cores and their task blocks (TaskRegistry.h).

#include "TaskRegistry.h"

#include "Task.h"

#include <atomic>
#include <new>

namespace TC::detail
{
CoreRecord* coreRegistry = nullptr;

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
} // namespace TC::detail
