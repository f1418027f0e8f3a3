// ParkedCoroutines: each thread lists the coroutines it suspends in slots of a block it owns, so
// that listing is a few plain stores; a resumer on any thread empties the slot with a store. The
// dump and the resumers meet through an asymmetric barrier: the dump raises a flag and makes
// every thread pass a full barrier (membarrier), after which a resumer either is seen by the
// dump to have emptied its slot or sees the flag and waits until the dump has read the entry.

#include "ParkedCoroutines.h"

#include "SchedulerWorker.h"
#include "ThreadState.h"

#include <TC/ISuspendCallback.h>

#include <TC/detail/SpinLock.h>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace TC::detail
{
namespace
{
using Slot = std::atomic<const SuspendedTaskEntry*>;

constexpr std::size_t kSlotsPerBlock = 256;
// Slots looked at for a free one before the thread takes another block.
constexpr std::size_t kSlotsTried = 8;

// Never freed: a resumer may empty a slot after its thread has exited.
struct SlotBlock
{
    Slot slots[kSlotsPerBlock]{};
    std::atomic<bool> owned{true}; // a live thread lists into it
    SlotBlock* next = nullptr;     // every block, under BlocksLock()
};

std::mutex& BlocksLock() noexcept
{
    static std::mutex lock;
    return lock;
}
SlotBlock* blocks = nullptr;

// Registers the process for expedited barriers once; false where the kernel lacks them, and the
// resumers then fence themselves.
bool RegisterForBarriers() noexcept
{
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
const bool expeditedBarriers = RegisterForBarriers();

std::atomic<bool> dumping{false};
std::mutex dumpLock; // one dump at a time

// A block no live thread owns that has a free slot (its index in `cursor`), else a new one.
SlotBlock* TakeBlock(std::size_t& cursor)
{
    std::lock_guard guard(BlocksLock());
    for (SlotBlock* block = blocks; block; block = block->next)
    {
        bool expected = false;
        if (!block->owned.compare_exchange_strong(expected, true, std::memory_order_acquire))
            continue;
        for (cursor = 0; cursor < kSlotsPerBlock; ++cursor)
            if (block->slots[cursor].load(std::memory_order_relaxed) == nullptr)
                return block;
        block->owned.store(false, std::memory_order_release);
    }
    auto* block = new SlotBlock;
    block->next = blocks;
    blocks = block;
    cursor = 0;
    return block;
}

// The calling thread's block; its exit leaves the block to the next thread that needs one.
struct ThreadSlots
{
    SlotBlock* block = nullptr;
    std::size_t cursor = 0;
    ~ThreadSlots()
    {
        if (block)
            block->owned.store(false, std::memory_order_release);
    }

    // Only this thread fills the block's slots; any thread empties them.
    Slot& FreeSlot()
    {
        if (block)
        {
            for (std::size_t i = 0; i < kSlotsTried; ++i)
            {
                Slot& slot = block->slots[cursor];
                cursor = (cursor + 1) % kSlotsPerBlock;
                if (slot.load(std::memory_order_relaxed) == nullptr)
                    return slot;
            }
            block->owned.store(false, std::memory_order_release); // full around the cursor
        }
        block = TakeBlock(cursor);
        Slot& slot = block->slots[cursor];
        cursor = (cursor + 1) % kSlotsPerBlock;
        return slot;
    }
};
thread_local ThreadSlots threadSlots;

[[gnu::noinline]] void WaitForDump() noexcept
{
    unsigned spins = 0;
    while (dumping.load(std::memory_order_acquire))
        SpinPause(spins);
}

// Every thread of the process passes a full barrier.
void HeavyBarrier() noexcept
{
    if (expeditedBarriers)
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
} // namespace

namespace
{
void Record(SuspendedTaskEntry& entry, const WaitTarget& target) noexcept
{
    entry.callbackType_.store(target.type, std::memory_order_relaxed);
    entry.waitedOn_.store(target.object, std::memory_order_relaxed);
    entry.waitedOnName_.store(target.name, std::memory_order_relaxed);
}
} // namespace

void ListParkedCoroutine(SuspendedTaskEntry& entry) noexcept
{
    // What it waits on, taken now: the dump never calls into a primitive whose resumer waits.
    if (entry.callback_)
        Record(entry, entry.callback_->WaitedOn());
    // The worker's coarse clock, as a task's wait is stamped; elsewhere the wait's start is unknown.
    const Worker* worker = CurrentThreadInSwitchFreeCode().worker;
    entry.suspendedAt_ = worker ? worker->tick : 0;
    try
    {
        Slot& slot = threadSlots.FreeSlot();
        entry.listing_ = &slot;
        slot.store(&entry, std::memory_order_release); // the dump reads what was written before
    }
    catch (...)
    {
        entry.listing_ = nullptr; // no memory for a block: this wait goes unlisted
    }
}

void ListParkedElsewhere(SuspendedTaskEntry& entry, std::coroutine_handle<> handle,
                         const WaitTarget& target) noexcept
{
    entry.kind_ = WaiterKind::Coroutine;
    entry.owner_ = handle.address();
    entry.callback_ = nullptr;
    Record(entry, target);
    ListParkedCoroutine(entry);
}

void UnlistParkedCoroutine(SuspendedTaskEntry& entry) noexcept
{
    auto* slot = static_cast<Slot*>(entry.listing_);
    if (!slot)
        return;
    entry.listing_ = nullptr;
    slot->store(nullptr, std::memory_order_relaxed);
    // The light side of the barrier: the store above comes before the load below.
    if (expeditedBarriers)
        std::atomic_signal_fence(std::memory_order_seq_cst);
    else
        std::atomic_thread_fence(std::memory_order_seq_cst);
    if (dumping.load(std::memory_order_relaxed)) [[unlikely]]
        WaitForDump(); // the dump may be reading the entry: it stays until the dump ends
}

void ForEachParkedCoroutine(const std::function<void(const SuspendedTaskEntry&)>& visit)
{
    std::lock_guard one(dumpLock);
    dumping.store(true, std::memory_order_relaxed);
    HeavyBarrier();
    {
        std::lock_guard guard(BlocksLock());
        for (SlotBlock* block = blocks; block; block = block->next)
            for (Slot& slot : block->slots)
                if (const SuspendedTaskEntry* entry = slot.load(std::memory_order_acquire))
                    visit(*entry);
    }
    dumping.store(false, std::memory_order_release);
}
} // namespace TC::detail
