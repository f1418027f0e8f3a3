#pragma once
// WaiterWord: conversions and the timeout claim of a one-word primitive whose word holds a small
// state value or its waiter's entry address (OneWordEvent, Mailbox<T>).

#include <TC/SuspendedTask.h>

#include <atomic>
#include <cstdint>

namespace TC::Synchronization::detail
{
// A waiter in the word: its entry's (pointer-aligned) address, never a small state value.
inline std::uintptr_t WordOf(SuspendedTask task) noexcept
{
    return reinterpret_cast<std::uintptr_t>(task.Entry());
}

inline SuspendedTaskEntry* EntryOf(std::uintptr_t word) noexcept
{
    return reinterpret_cast<SuspendedTaskEntry*>(word);
}

inline SuspendedTask WaiterOf(std::uintptr_t word) noexcept
{
    return SuspendedTask(EntryOf(word));
}

// OnTimeout's claim: moves the word from `task` to `idle`; exactly one of it and a resumer's
// RMW wins. True if the timeout did.
inline bool ClaimForTimeout(std::atomic<std::uintptr_t>& word, SuspendedTask task,
                            std::uintptr_t idle) noexcept
{
    std::uintptr_t expected = WordOf(task);
    // acq_rel: claims the waiter against a resumer doing the same.
    return word.compare_exchange_strong(expected, idle, std::memory_order_acq_rel,
                                        std::memory_order_relaxed);
}
} // namespace TC::Synchronization::detail
