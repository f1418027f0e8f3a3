#pragma once
// ISuspendCallback: what a primitive gives SuspendTask to publish the suspended waiter.
//   struct Waiter : TC::ISuspendCallback
//   { void OnSuspended(TC::SuspendedTask task) noexcept override; };

#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <typeinfo>

namespace TC
{
// What a waiter waits on, for diagnostics (name nullptr: the type's).
struct WaitTarget
{
    const void* object = nullptr;
    const std::type_info* type = nullptr;
    const char* name = nullptr;
};

// Implemented by a primitive. Members run outside any task and must not suspend, yield or wait
// ("wait inside a callback").
class TC_API ISuspendCallback
{
public:
    // Once the waiter is off the processor (scheduler or waiting thread, await_suspend): publish
    // the handle, re-check; if the condition holds, claim it back (atomic exchange) and resume it.
    // After publishing, the waiter may be gone: touch it only through a successful claim.
    virtual void OnSuspended(SuspendedTask task) noexcept = 0;

    // At a SuspendTaskFor deadline (timer thread; zero or negative timeout: right after
    // OnSuspended). True: took the handle back, the wait returns false; false: a resumer has it.
    // Never resume here. Default: false (no timeouts).
    virtual bool OnTimeout(SuspendedTask /*task*/) noexcept { return false; }

    // For reports (default: this object; a per-wait callback returns the object it stands for).
    // Called only while suspended, outside the primitive's locks.
    virtual WaitTarget WaitedOn() const noexcept { return {this, &typeid(*this), nullptr}; }

protected:
    ISuspendCallback() = default;
    ISuspendCallback(const ISuspendCallback&) = default;
    ISuspendCallback& operator=(const ISuspendCallback&) = default;
    ~ISuspendCallback() = default;
};
} // namespace TC
