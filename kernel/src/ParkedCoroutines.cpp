// ParkedCoroutines: sharded lists, so that coroutines suspending and resuming on several workers
// rarely meet on one lock; each shard is a spin lock and a doubly linked list through the entries'
// own links (hangPrev_/hangNext_, free outside checked builds).

#include "ParkedCoroutines.h"

#include "SchedulerCore.h"
#include "SchedulerWorker.h"
#include "ThreadState.h"

#include <TC/detail/SpinLock.h>

#include <cstdint>
#include <mutex>

namespace TC::detail
{
namespace
{
constexpr std::size_t kShards = 16;

struct alignas(64) Shard
{
    SpinLock lock;
    SuspendedTaskEntry* head = nullptr;
};

Shard shards[kShards];

Shard& ShardOf(const SuspendedTaskEntry& entry) noexcept
{
    // Entries sit in coroutine frames: the bits above a cache line spread them.
    const auto bits = reinterpret_cast<std::uintptr_t>(&entry) >> 6;
    return shards[(bits ^ (bits >> 4)) % kShards];
}
} // namespace

void ListParkedCoroutine(SuspendedTaskEntry& entry) noexcept
{
    // The worker's coarse clock, as a task's wait is stamped; elsewhere the wait's start is unknown.
    const Worker* worker = CurrentThreadInSwitchFreeCode().worker;
    entry.suspendedAt_ = worker ? worker->tick : 0;
    Shard& shard = ShardOf(entry);
    std::lock_guard guard(shard.lock);
    entry.hangPrev_ = nullptr;
    entry.hangNext_ = shard.head;
    if (shard.head)
        shard.head->hangPrev_ = &entry;
    shard.head = &entry;
    entry.listed_ = true;
}

void ListParkedElsewhere(SuspendedTaskEntry& entry, std::coroutine_handle<> handle,
                         const WaitTarget& target) noexcept
{
    entry.kind_ = WaiterKind::Coroutine;
    entry.owner_ = handle.address();
    entry.callback_ = nullptr;
    entry.callbackType_.store(target.type, std::memory_order_relaxed);
    entry.waitedOn_.store(target.object, std::memory_order_relaxed);
    entry.waitedOnName_.store(target.name, std::memory_order_relaxed);
    ListParkedCoroutine(entry);
}

void UnlistParkedCoroutine(SuspendedTaskEntry& entry) noexcept
{
    if (!entry.listed_)
        return;
    Shard& shard = ShardOf(entry);
    std::lock_guard guard(shard.lock);
    if (entry.hangPrev_)
        entry.hangPrev_->hangNext_ = entry.hangNext_;
    else
        shard.head = entry.hangNext_;
    if (entry.hangNext_)
        entry.hangNext_->hangPrev_ = entry.hangPrev_;
    entry.hangPrev_ = entry.hangNext_ = nullptr;
    entry.listed_ = false;
}

void ForEachParkedCoroutine(const std::function<void(const SuspendedTaskEntry&)>& visit)
{
    for (Shard& shard : shards)
    {
        std::lock_guard guard(shard.lock);
        for (const SuspendedTaskEntry* entry = shard.head; entry; entry = entry->hangNext_)
            visit(*entry);
    }
}
} // namespace TC::detail
