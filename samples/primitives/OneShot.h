#pragma once
// OneShot<T>: a value set once, read by any number of waiters of any kind, with timeouts.
// A sample primitive on WaitQueue (guides/many-waiters-with-timeouts.md).

#include <TC/WaitForResult.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>

namespace Samples
{
// [guide:one-shot]
// Set publishes the value and resumes everyone; a waiter that finds it set passes without
// touching the queue. The creator or the last waiter may destroy it once its wait returned
// (no other call running or to come): the destructor waits out a Set still in ResumeAll.
template <class T>
class OneShot
{
public:
    ~OneShot() { waiters_.WaitOutResumers(); }

    // The first Set wins and returns true; later ones change nothing and return false.
    bool Set(T value)
    {
        std::uint8_t expected = kEmpty;
        if (!state_.compare_exchange_strong(expected, kSetting))
            return false;
        value_.emplace(std::move(value));
        auto scope = waiters_.ResumerScope(); // a waiter seeing kSet may destroy us
        state_.store(kSet, std::memory_order_release);
        waiters_.ResumeAll();
        return true;
    }

    // Never waits: the value once set, else nullptr.
    const T* TryGet() const noexcept
    {
        // acquire: the value Set wrote.
        return state_.load(std::memory_order_acquire) == kSet ? &*value_ : nullptr;
    }

    // Waits until it is set; nullptr if `timeout` passed first.
    const T* Get(TC::Duration timeout = TC::Duration::Infinite())
    {
        auto got = TC::WaitForResult(waiters_, [this]() noexcept { return Attempt(); }, timeout);
        return got ? *got : nullptr;
    }

    TC::Strands::Task<const T*> GetAsync(TC::Duration timeout = TC::Duration::Infinite())
    {
        auto got = co_await TC::WaitForResultAsync(
            waiters_, [this]() noexcept { return Attempt(); }, timeout);
        co_return got ? *got : nullptr;
    }

private:
    std::optional<const T*> Attempt() const noexcept
    {
        const T* value = TryGet();
        return value ? std::optional<const T*>(value) : std::nullopt;
    }

    static constexpr std::uint8_t kEmpty = 0, kSetting = 1, kSet = 2;
    std::atomic<std::uint8_t> state_{kEmpty};
    std::optional<T> value_;
    TC::WaitQueue waiters_{"OneShot"};
};
// [/guide:one-shot]
} // namespace Samples
