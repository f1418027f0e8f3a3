#pragma once
// SuspensionKind: how many tasks may be suspended on one object at a time, and with what rules.

#include <cstdint>

namespace TC::Synchronization
{
// Chooses the waiter store of SuspendableBase.
enum class SuspensionKind : std::uint8_t
{
    // One suspended waiter at a time, kept in one atomic slot; timed waits claim it back.
    Single,
    // Any number of waiters on a lock-free intrusive stack: woken newest first (LIFO), the task
    // that constructed the object last. Timed waiters wait on a locked FIFO beside the stack.
    Multiple,
};
} // namespace TC::Synchronization
