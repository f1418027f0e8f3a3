#pragma once
// ParkedWorkFor: the TC::ParkedWork (kernel <TC/Executor.h>) a parking coroutine hands an
// executor, derived from its own promise.

#include <TC/Executor.h>
#include <TC/Strands/Awaitable.h>

#include <coroutine>

namespace TC::detail
{
// The root of the parking coroutine's chain where nobody owns it, or a null handle.
template <class Promise>
std::coroutine_handle<> UnownedRootOf(std::coroutine_handle<Promise> handle) noexcept
{
    if constexpr (CarriesUnownedRoot<Promise>)
        return handle.promise().UnownedRoot();
    else
        return {};
}

// What a coroutine parking itself hands an executor: its handle, plus the chain root to free if
// the executor never resumes it (only where the chain belongs to nobody).
template <class Promise>
ParkedWork ParkedWorkFor(std::coroutine_handle<Promise> handle) noexcept
{
    return ParkedWork{handle, UnownedRootOf(handle)};
}
} // namespace TC::detail
