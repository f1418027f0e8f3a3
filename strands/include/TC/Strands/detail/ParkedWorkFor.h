#pragma once
// ParkedWorkFor: the ParkedWork a parking coroutine hands an executor, from its own promise.

#include <TC/Executor.h>
#include <TC/Strands/Awaitable.h>

#include <coroutine>

namespace TC::detail
{
// The root of the parking coroutine's chain where nobody owns it, or a null handle.
template <class Promise>
std::coroutine_handle<> UnownedRootOf(std::coroutine_handle<Promise> handle) noexcept
{
    if constexpr (Strands::CarriesUnownedRoot<Promise>)
        return handle.promise().UnownedRoot();
    else
        return {};
}

// The handle, plus the root to free if never resumed (only for an unowned chain).
template <class Promise>
ParkedWork ParkedWorkFor(std::coroutine_handle<Promise> handle) noexcept
{
    return ParkedWork{handle, UnownedRootOf(handle)};
}
} // namespace TC::detail
