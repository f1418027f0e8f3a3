#pragma once
// The seed's Mailbox (guide "Custom primitives"), used across the kernel tests.

#include "support/StressScale.h"
#include <TC/Core.h>

#include <atomic>
#include <cstdlib>

namespace TestSupport
{
// Holds one int (0 means empty) for one waiting task. Put may be called from any thread.
// Its re-check in OnSuspended reads the mailbox after publishing the waiter, so a mailbox must
// outlive every OnSuspended that may still be running on a scheduler thread: the tests declare
// mailboxes before the scheduler, whose destructor joins its threads.
class Mailbox final : private TC::ISuspendCallback
{
public:
    void Put(int value) noexcept
    {
        value_.store(value, std::memory_order_seq_cst);
        if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
            TC::ResumeTask(waiter);
    }

    int Take() noexcept
    {
        int value;
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            TC::SuspendTask(this);
        return value;
    }

    bool Take(int& value, TC::Duration timeout) noexcept
    {
        while ((value = value_.exchange(0, std::memory_order_acq_rel)) == 0)
            if (!TC::SuspendTaskFor(this, timeout))
                return false;
        return true;
    }

    TC::ISuspendCallback* Callback() noexcept { return this; }

private:
    void OnSuspended(TC::SuspendedTask task) noexcept override
    {
        waiter_.store(task, std::memory_order_seq_cst);
        if (value_.load(std::memory_order_seq_cst) != 0)
            if (auto waiter = waiter_.exchange(nullptr, std::memory_order_acq_rel))
                TC::ResumeTask(waiter);
    }

    bool OnTimeout(TC::SuspendedTask task) noexcept override
    {
        TC::SuspendedTask expected = task;
        return waiter_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
    }

    std::atomic<int> value_{0};
    std::atomic<TC::SuspendedTask> waiter_{nullptr};
};

// Operation counts: the full count in an optimised build, a fifth in a debug build, a
// twentieth under a sanitizer; TC_STRESS_SCALE multiplies on top (tests/support/StressScale.h).
inline long Scaled(long count)
{
    double scale = 1.0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    scale = 0.05;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    scale = 0.05;
#endif
#endif
#ifndef NDEBUG
    scale = scale > 0.2 ? 0.2 : scale;
#endif
    return TCStress::Scale<long>(count, scale, 1, 1L << 40);
}
} // namespace TestSupport
