// Task memory: stacks and task blocks, each kept in a per-worker cache and a shared pool.

#include "SchedulerInternals.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace TC::detail
{
StackMemory SchedulerCore::TakeStack(std::size_t size, Worker* worker)
{
    if (size == defaultStackSize && worker && worker->core == this)
    {
        std::vector<StackMemory>& cache = worker->stackCache;
        if (cache.empty())
        {
            // Refill from the pool (the cache's capacity was reserved: no allocation): a batch
            // when it holds one (a worker's spill after a burst: one lock per batch), else one
            // stack. A worker that took the few stacks there would keep them from the others,
            // who would allocate meanwhile -- while stacks come home from tasks that ended
            // elsewhere, for ever, at random.
            std::lock_guard lock(stackLock_);
            auto found = stackPool_.find(size);
            if (found != stackPool_.end())
            {
                std::vector<StackMemory>& pooled = found->second;
                const std::size_t count = pooled.size() >= kStackBatch ? kStackBatch
                                                                       : std::min<std::size_t>(pooled.size(), 1);
                cache.insert(cache.end(), pooled.end() - static_cast<std::ptrdiff_t>(count), pooled.end());
                pooled.resize(pooled.size() - count);
                pooledStackBytes_ -= count * size;
            }
        }
        if (!cache.empty())
        {
            StackMemory stack = cache.back();
            cache.pop_back();
            return stack;
        }
    }
    {
        std::lock_guard lock(stackLock_);
        auto found = stackPool_.find(size);
        if (found != stackPool_.end() && !found->second.empty())
        {
            StackMemory stack = found->second.back();
            found->second.pop_back();
            pooledStackBytes_ -= size;
            return stack;
        }
    }
    StackMemory stack;
    stack.size = size;
    stack.guardBytes = GuardBytes();
    stack.origin = this;
    stack.base = allocator->AllocateStack(size, stack.guardBytes);
    return stack;
}

std::size_t SchedulerCore::GuardBytes() const noexcept
{
    if (options.stackGuard == StackGuard::None)
        return 0;
    return RoundUp(std::max<std::size_t>(options.stackGuardBytes, 1), PageSize());
}

void SchedulerCore::FreeStack(const StackMemory& stack) noexcept
{
    stack.origin->allocator->DeallocateStack(stack.base, stack.size, stack.guardBytes);
}

void SchedulerCore::ReturnStack(StackMemory stack, Worker* worker) noexcept
{
    // A stack a task brought from another scheduler (MoveCurrentTaskTo) goes home: pooled here,
    // host tasks of another size would never reuse it while its own scheduler allocated anew
    // (and it could have another allocator or guard). Its home core is still there: the task's
    // block holds it, and is freed after this.
    if (stack.origin != this) [[unlikely]]
    {
        stack.origin->ReturnStackFromElsewhere(stack);
        return;
    }
    if (stack.size == defaultStackSize && worker && worker->core == this)
    {
        std::vector<StackMemory>& cache = worker->stackCache;
        if (cache.size() == kStackCacheLimit)
        {
            // Full: hand the oldest batch to the pool under one lock, where other workers find
            // it -- as much of it as the pool's budget takes; the rest is freed after the lock.
            std::size_t kept = 0;
            try
            {
                std::lock_guard lock(stackLock_);
                kept = std::min(kStackBatch, StackPoolRoom(stack.size));
                std::vector<StackMemory>& pooled = stackPool_[stack.size];
                pooled.insert(pooled.end(), cache.begin(),
                              cache.begin() + static_cast<std::ptrdiff_t>(kept));
                pooledStackBytes_ += kept * stack.size;
            }
            catch (...)
            {
                kept = 0; // the pool could not grow: the whole batch is freed
            }
            for (std::size_t i = kept; i < kStackBatch; ++i)
                FreeStack(cache[i]);
            cache.erase(cache.begin(), cache.begin() + kStackBatch);
        }
        cache.push_back(stack); // the capacity was reserved up front: never allocates
        return;
    }
    ReturnStackFromElsewhere(stack);
}

void SchedulerCore::ReturnStackFromElsewhere(const StackMemory& stack) noexcept
{
    try
    {
        std::lock_guard lock(stackLock_);
        if (!stacksOrphaned_ && StackPoolRoom(stack.size) > 0)
        {
            stackPool_[stack.size].push_back(stack);
            pooledStackBytes_ += stack.size;
            return;
        }
    }
    catch (...)
    {
        // The pool could not grow: freed below.
    }
    FreeStack(stack);
}

std::size_t SchedulerCore::StackPoolRoom(std::size_t size) const noexcept
{
    const std::size_t budget = options.stackPoolBytes;
    return pooledStackBytes_ >= budget ? 0 : (budget - pooledStackBytes_) / size;
}

std::size_t SchedulerCore::TrimStackPool() noexcept
{
    // A batch at a time out of the lock: the allocator's Deallocate (munmap) runs unlocked, and
    // the pool's vectors keep their capacity, so the next release allocates nothing. At most
    // what the pool held at the first look: stacks released meanwhile do not keep it going.
    std::size_t freed = 0; // counted as the stacks are taken out, each freed right after
    std::size_t limit = SIZE_MAX;
    for (;;)
    {
        std::array<StackMemory, kStackBatch> batch;
        std::size_t count = 0;
        {
            std::lock_guard lock(stackLock_);
            if (limit == SIZE_MAX)
                limit = pooledStackBytes_;
            for (auto& [size, stacks] : stackPool_)
                while (count < batch.size() && freed < limit && !stacks.empty())
                {
                    batch[count++] = stacks.back();
                    stacks.pop_back();
                    pooledStackBytes_ -= size;
                    freed += size;
                }
        }
        if (count == 0)
            return freed;
        for (std::size_t i = 0; i < count; ++i)
            FreeStack(batch[i]);
    }
}

void* SchedulerCore::TakeBlockSlow(Worker* worker)
{
    if (blockPoolCount_.load(std::memory_order_relaxed) != 0) // a peek; the lock decides
    {
        std::lock_guard lock(blockLock_);
        if (FreeTaskBlock* block = blockPool_)
        {
            // A worker takes a batch, so blocks that flow from one worker to another (tasks
            // started on one, freed on the other) cost one lock per batch, not per task.
            // Only from a pool that holds a batch: a worker that took the few blocks there would
            // keep them from the others, who would allocate meanwhile (as with stacks, TakeStack).
            std::size_t taken = 1;
            FreeTaskBlock* last = block;
            if (worker && blockPoolCount_.load(std::memory_order_relaxed) >= kBlockBatch)
                for (; taken < kBlockBatch && last->next; ++taken)
                    last = last->next;
            blockPool_ = last->next;
            blockPoolCount_.store(blockPoolCount_.load(std::memory_order_relaxed) - taken,
                                  std::memory_order_relaxed);
            last->next = nullptr;
            if (worker && taken > 1)
            {
                worker->blockCache = block->next;
                worker->blockCacheCount = taken - 1;
            }
            return block;
        }
    }
    void* block = ::operator new(kTaskBlockAllocation, std::align_val_t(kTaskBlockAlign));
    blocks.fetch_add(1, std::memory_order_relaxed); // this core cannot go: its Scheduler counts
    RegisterBlock(registry_, block); // DumpTasks and the debugger find its tasks from now on
    return block;
}

void* SchedulerCore::TakeBlockFrom(IBlockAllocator& source)
{
    void* block = source.Allocate(kTaskBlockAllocation, kTaskBlockAlign);
    if (!block || reinterpret_cast<std::uintptr_t>(block) % kTaskBlockAlign != 0) [[unlikely]]
    {
        if (block)
            source.Free(block, kTaskBlockAllocation, kTaskBlockAlign);
        throw std::logic_error("TC::IBlockAllocator::Allocate returned " +
                               std::string(block ? "a block below the alignment asked for"
                                                 : "nullptr (throw std::bad_alloc instead)"));
    }
    blocks.fetch_add(1, std::memory_order_relaxed); // this core cannot go: its Scheduler counts
    RegisterBlock(registry_, block);
    RecordOf(block).allocator = &source;
    return block;
}

void SchedulerCore::FreeBlockTo(void* block) noexcept
{
    IBlockAllocator* source = RecordOf(block).allocator;
    UnregisterBlock(registry_, block);
    source->Free(block, kTaskBlockAllocation, kTaskBlockAlign);
    if (DropBlocks(1))
        delete this; // the Scheduler is gone and this was its last block
}

FreeTaskBlock* SchedulerCore::TakeBlocks(std::size_t count, Worker* worker, IBlockAllocator* source)
{
    FreeTaskBlock* list = nullptr;
    std::size_t have = 0;
    auto push = [&](void* memory)
    {
        auto* block = static_cast<FreeTaskBlock*>(memory);
        block->next = list;
        list = block;
        ++have;
    };
    if (source)
    {
        // One block per task from the allocator; all of them back to it if one throws.
        try
        {
            while (have < count)
                push(TakeBlockFrom(*source));
        }
        catch (...)
        {
            while (list)
                FreeBlockTo(std::exchange(list, list->next));
            throw;
        }
        return list;
    }
    if (worker)
        for (; have < count && worker->blockCache; --worker->blockCacheCount)
            push(std::exchange(worker->blockCache, worker->blockCache->next));
    if (have < count && blockPoolCount_.load(std::memory_order_relaxed) != 0)
    {
        std::lock_guard lock(blockLock_);
        std::size_t taken = 0;
        for (; have < count && blockPool_; ++taken)
            push(std::exchange(blockPool_, blockPool_->next));
        blockPoolCount_.store(blockPoolCount_.load(std::memory_order_relaxed) - taken,
                              std::memory_order_relaxed);
    }
    try
    {
        while (have < count)
        {
            void* block = ::operator new(kTaskBlockAllocation, std::align_val_t(kTaskBlockAlign));
            blocks.fetch_add(1, std::memory_order_relaxed);
            RegisterBlock(registry_, block);
            push(block);
        }
    }
    catch (...)
    {
        while (list)
            ReturnBlock(std::exchange(list, list->next), worker != nullptr);
        throw;
    }
    return list;
}

void SchedulerCore::ReturnBlockSlow(FreeTaskBlock* block, Worker* worker) noexcept
{
    // A full worker cache hands the pool a batch along with this block (one lock per batch).
    FreeTaskBlock* first = block;
    FreeTaskBlock* last = block;
    std::size_t count = 1;
    if (worker)
    {
        last->next = worker->blockCache;
        for (; count < kBlockBatch && last->next; ++count)
            last = last->next;
        worker->blockCache = last->next;
        worker->blockCacheCount -= count - 1;
    }
    {
        std::lock_guard lock(blockLock_);
        const std::size_t pooled = blockPoolCount_.load(std::memory_order_relaxed);
        if (!orphaned_ && pooled + count <= kBlockPoolLimit)
        {
            last->next = blockPool_;
            blockPool_ = first;
            blockPoolCount_.store(pooled + count, std::memory_order_relaxed);
            return;
        }
    }
    // Past the pool's limit, or the Scheduler is gone: freed, and the last block frees the core.
    last->next = nullptr;
    if (DropBlocks(FreeBlocks(first)))
        delete this;
}

std::uint64_t SchedulerCore::FreeBlocks(FreeTaskBlock* block) noexcept
{
    std::uint64_t count = 0;
    for (; block; ++count)
    {
        void* memory = std::exchange(block, block->next);
        UnregisterBlock(registry_, memory);
        ::operator delete(memory, std::align_val_t(kTaskBlockAlign));
    }
    return count;
}

bool SchedulerCore::Orphan() noexcept
{
    // After Shutdown: no worker runs any more, so their caches are ours to empty; a JoinHandle
    // released from now on frees its block (ReturnBlockSlow) instead of pooling it.
    FreeTaskBlock* pooled = nullptr;
    {
        std::lock_guard lock(blockLock_);
        orphaned_ = true;
        pooled = std::exchange(blockPool_, nullptr);
        blockPoolCount_.store(0, std::memory_order_relaxed);
    }
    std::uint64_t freed = FreeBlocks(pooled);
    for (auto& worker : workers_)
    {
        freed += FreeBlocks(std::exchange(worker->blockCache, nullptr));
        worker->blockCacheCount = 0;
    }
    // The stacks go back to the allocator now, not when the last block goes: a task that moved
    // elsewhere may keep this core for as long as it runs. Its stack, when it ends, is freed
    // too (ReturnStackFromElsewhere).
    {
        std::lock_guard lock(stackLock_);
        stacksOrphaned_ = true;
    }
    TrimStackPool();
    for (auto& worker : workers_)
    {
        for (const StackMemory& stack : worker->stackCache)
            FreeStack(stack);
        worker->stackCache.clear();
    }
    return DropBlocks(freed + 1); // and the Scheduler's own count
}
} // namespace TC::detail
