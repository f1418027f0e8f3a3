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
    // Any number of waiters on a lock-free stack, woken newest first, the creator last; timed
    // waiters on a locked FIFO beside it.
    Multiple,
};
} // namespace TC::Synchronization
