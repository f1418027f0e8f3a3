#pragma once
// SuspensionKind: how many tasks may be suspended on one object at a time, and with what rules.

#include <cstdint>

namespace TC::Synchronization
{
// Chooses the waiter store of SuspendableBase.
enum class SuspensionKind : std::uint8_t
{
    // One waiter at a time, in one atomic slot.
    Single,
    // Any number; newest first, the creator last; timed waiters FIFO.
    Multiple,
};
} // namespace TC::Synchronization
