#pragma once
// ISuspendCallback: what a primitive gives SuspendTask so it can publish the suspended waiter.
//   struct Waiter : TC::ISuspendCallback
//   { void OnSuspended(TC::SuspendedTask task) noexcept override; };

#include <TC/SuspendedTask.h>
#include <TC/detail/Export.h>

#include <typeinfo>

namespace TC
{
// What a waiter waits on, for diagnostics: address, type, optional name (nullptr: the type's).
struct WaitTarget
{
    const void* object = nullptr;
    const std::type_info* type = nullptr;
    const char* name = nullptr;
};

// Implemented by a primitive. Both members run outside any task and must not suspend, yield or
// wait ("wait inside a callback").
class TC_API ISuspendCallback
{
public:
    // Once the waiter is off the processor (scheduler thread, waiting thread, or await_suspend):
    // publish the handle, re-check; if the condition holds, claim it back (atomic exchange) and
    // ResumeTask it. The waiter may have returned before this returns: after publishing, touch
    // nothing of its but through a successful claim.
    virtual void OnSuspended(SuspendedTask task) noexcept = 0;

    // On the timer thread at a SuspendTaskFor deadline, the waiter still suspended (zero or
    // negative timeout: right after OnSuspended on the waiting thread). True: took the handle
    // back (the wait returns false); false: a resumer has it (the wait returns true on its
    // ResumeTask). Never resume here. The default, false, suits primitives without timeouts.
    virtual bool OnTimeout(SuspendedTask /*task*/) noexcept { return false; }

    // What a waiter with this callback waits on, for reports: by default this object's dynamic
    // type; a per-wait callback returns the object it stands for. Called only while suspended,
    // outside the primitive's locks; must not wait.
    virtual WaitTarget WaitedOn() const noexcept { return {this, &typeid(*this), nullptr}; }

protected:
    ISuspendCallback() = default;
    ISuspendCallback(const ISuspendCallback&) = default;
    ISuspendCallback& operator=(const ISuspendCallback&) = default;
    ~ISuspendCallback() = default;
};
} // namespace TC
