#pragma once
// detail::UniqueCoroHandle<Promise>: the move-only owner of a combinator child runner's frame.

#include <coroutine>
#include <utility>

namespace TC::detail
{
template <class Promise>
class UniqueCoroHandle
{
public:
    using Handle = std::coroutine_handle<Promise>;

    UniqueCoroHandle() noexcept = default;
    explicit UniqueCoroHandle(Handle handle) noexcept : handle_(handle) {}
    UniqueCoroHandle(UniqueCoroHandle&& other) noexcept : handle_(std::exchange(other.handle_, {}))
    {
    }
    UniqueCoroHandle& operator=(UniqueCoroHandle&& other) noexcept
    {
        if (this != &other)
        {
            Reset();
            handle_ = std::exchange(other.handle_, {});
        }
        return *this;
    }
    UniqueCoroHandle(const UniqueCoroHandle&) = delete;
    UniqueCoroHandle& operator=(const UniqueCoroHandle&) = delete;
    ~UniqueCoroHandle() { Reset(); }

    // Destroys the frame, and with it -- through the awaiters it holds -- every frame it owns.
    void Reset() noexcept
    {
        if (auto handle = std::exchange(handle_, {}))
            handle.destroy();
    }
    Handle Release() noexcept { return std::exchange(handle_, {}); }
    Handle Get() const noexcept { return handle_; }
    Promise& GetPromise() const noexcept { return handle_.promise(); }
    explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

private:
    Handle handle_;
};
} // namespace TC::detail
