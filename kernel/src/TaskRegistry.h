#pragma once
// TaskRegistry: every task block each scheduler core has made, and every core, so that
// TC::Diagnostics::DumpTasks and the debugger extension (tools/gdb) find every live task without
// the start or the end of a task doing anything for it. A block is linked when it is allocated
// and unlinked when it is deleted -- the pool's slow paths -- and a task in it says what it is
// doing through Task::runState. The debugger reads these structures from memory (a live process
// or a core file): keep them plain pointers and integers.

#include <cstdint>
#include <mutex>

namespace TC
{
class IBlockAllocator;
}

namespace TC::detail
{
struct Task;
struct ThreadState;
struct Worker;
class SchedulerCore;

// Trails every task block (at block + kTaskBlockSize), outside the Task, so a task's start and
// end never touch it.
struct BlockRecord
{
    BlockRecord* prev = nullptr;
    BlockRecord* next = nullptr;
    Task* task = nullptr;   // the block's Task (its runState says whether one lives there)
    std::uint64_t id = 0;   // the block's number, unique in the process: the task's id
    IBlockAllocator* allocator = nullptr; // the block's source when not the core's pools
};

inline constexpr std::size_t kBlockRecordBytes = 64;
static_assert(sizeof(BlockRecord) <= kBlockRecordBytes);

// One scheduler core's part of the registry, a member of the core.
struct CoreRecord
{
    CoreRecord* prev = nullptr;
    CoreRecord* next = nullptr;
    SchedulerCore* core = nullptr;
    const char* name = "";         // the scheduler's name (SchedulerOptions::name)
    Worker** workers = nullptr;    // workerCount of them; a scheduler without workers has its host's
    unsigned workerCount = 0;
    bool hasWorkerThreads = false;
    BlockRecord* blocks = nullptr; // newest first, under `lock`
    std::mutex lock;
};

// The cores in existence, newest first, under RegistryLock(). A named global, for the debugger.
extern CoreRecord* coreRegistry;
std::mutex& RegistryLock() noexcept;

void RegisterCore(CoreRecord& record) noexcept;
void UnregisterCore(CoreRecord& record) noexcept;
// A block just allocated (its memory otherwise uninitialized): marks it free and links it.
void RegisterBlock(CoreRecord& record, void* block) noexcept;
// A block about to be deleted.
void UnregisterBlock(CoreRecord& record, void* block) noexcept;
// The record that trails `block`.
BlockRecord& RecordOf(void* block) noexcept;

// The threads that have made a converted-thread wait longer than its spin, newest first, under
// RegistryLock(): each joins at its first and leaves when it exits. A named global, for the
// debugger.
extern ThreadState* threadRegistry;
// Lists the calling thread's state (not yet listed).
void ListThread(ThreadState& thread) noexcept;
} // namespace TC::detail
