#pragma once
// Helpers around TC::ParkedWork (kernel <TC/Executor.h>): deriving what a parking coroutine
// hands an executor from its own promise, and a container entry that frees what it drops.

#include <TC/Executor.h>
#include <TC/Strands/Awaitable.h>

#include <coroutine>
#include <utility>

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

// Owns a ParkedWork's abandon path for as long as it holds it: Resume() disowns and resumes in
// one step, and work it is destroyed holding is abandoned (its unowned chain freed), never
// silently dropped.
class Parked
{
public:
    Parked() noexcept = default;
    explicit Parked(ParkedWork work) noexcept : work_(work) {}
    Parked(Parked&& other) noexcept : work_(std::exchange(other.work_, {})) {}
    Parked& operator=(Parked&& other) noexcept
    {
        if (this != &other)
        {
            work_.Abandon();
            work_ = std::exchange(other.work_, {});
        }
        return *this;
    }
    ~Parked() { work_.Abandon(); }

    explicit operator bool() const noexcept { return static_cast<bool>(work_.handle); }
    void Resume()
    {
        std::coroutine_handle<> handle = std::exchange(work_, {}).handle;
        handle.resume();
    }
    ParkedWork Take() noexcept { return std::exchange(work_, {}); }

private:
    ParkedWork work_;
};
} // namespace TC::detail
