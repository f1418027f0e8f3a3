#pragma once
// SuspensionKind: how many tasks may be suspended on one object at a time, and with what rules.

#include <cstdint>

namespace TC::Synchronization
{
// Chooses the waiter store of SuspendableBase.
enum class SuspensionKind : std::uint8_t
{
    // One suspended waiter at a time, kept in one atomic slot. The only kind with timeouts.
    Single,
    // Any number of waiters on a lock-free intrusive stack: woken newest first (LIFO), the task
    // that constructed the object last. No timeouts.
    Multiple,
};
} // namespace TC::Synchronization
