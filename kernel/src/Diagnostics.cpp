// Race-point hook, the suspended-waiter registry and the hang-report watchdog.

#include "Diagnostics.h"
#include "ParkedCoroutines.h"

#include "Task.h"
#include "Timers.h"

#include <TC/ISuspendCallback.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <typeinfo>

namespace TC::detail
{
std::atomic<RacePointHook> racePointHook{nullptr};

namespace
{
struct Registry
{
    std::mutex lock;
    SuspendedTaskEntry* head = nullptr; // newest first
    SuspendedTaskEntry* tail = nullptr; // oldest
    std::condition_variable wake;
    std::int64_t threshold = 0;
    bool watching = false;
    std::thread watchdog;

    static Registry& Instance()
    {
        static Registry registry;
        return registry;
    }

    ~Registry()
    {
        {
            std::lock_guard guard(lock);
            watching = false;
        }
        wake.notify_all();
        if (watchdog.joinable())
            watchdog.join();
    }
};

std::string Demangle(const char* name)
{
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                std::free);
    return status == 0 && text ? text.get() : name;
}

[[maybe_unused]] SuspendedWaiterInfo Describe(const SuspendedTaskEntry& entry, std::int64_t now)
{
    SuspendedWaiterInfo info;
    info.waitsOn = PrimitiveTypeOf(entry);
    switch (entry.kind_)
    {
    case WaiterKind::Task:
        info.waiter = std::string("task '") + static_cast<const Task*>(entry.owner_)->name + "'";
        break;
    case WaiterKind::Thread:
        info.waiter = "thread";
        break;
    case WaiterKind::Coroutine:
        info.waiter = "coroutine";
        break;
    }
    info.suspendedFor = Duration::FromNanoseconds(now - entry.suspendedAt_);
    return info;
}

[[maybe_unused]] void Watch()
{
    Registry& registry = Registry::Instance();
    std::unique_lock guard(registry.lock);
    while (registry.watching)
    {
        registry.wake.wait_for(guard, std::chrono::nanoseconds(std::max<std::int64_t>(registry.threshold / 2, 1000000)));
        const std::int64_t now = SteadyNowNanoseconds();
        bool header = false;
        for (SuspendedTaskEntry* entry = registry.tail; entry; entry = entry->hangPrev_)
        {
            if (entry->hangReported_ || now - entry->suspendedAt_ < registry.threshold)
                continue;
            entry->hangReported_ = true;
            const SuspendedWaiterInfo info = Describe(*entry, now);
            if (!header)
            {
                std::fprintf(stderr, "TC hang report: waits not resumed after %.3f s:\n",
                             static_cast<double>(registry.threshold) / 1e9);
                header = true;
            }
            std::fprintf(stderr, "  %s waits on %s for %.3f s\n", info.waiter.c_str(), info.waitsOn.c_str(),
                         static_cast<double>(info.suspendedFor.Nanoseconds()) / 1e9);
        }
        if (header)
            std::fflush(stderr);
    }
}
} // namespace

std::string NameOf(const WaitTarget& target)
{
    if (target.name)
        return target.name;
    if (target.type)
        return Demangle(target.type->name());
    return "?";
}

std::string DescribeException(const std::exception_ptr& error)
{
    try
    {
        std::rethrow_exception(error);
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    catch (...)
    {
        return "an exception not derived from std::exception";
    }
}

std::string PrimitiveTypeOf(const SuspendedTaskEntry& entry)
{
    // Read from what was recorded at suspension: by the time a rule is broken the callback
    // object itself may be gone.
    return NameOf(RecordedWaitTarget(entry));
}

WaitTarget RecordedWaitTarget(const SuspendedTaskEntry& entry) noexcept
{
    // Relaxed: a report may race a waiter suspending again and then names either suspension.
    return {entry.waitedOn_.load(std::memory_order_relaxed),
            static_cast<const std::type_info*>(entry.callbackType_.load(std::memory_order_relaxed)),
            entry.waitedOnName_.load(std::memory_order_relaxed)};
}

void RegisterSuspended([[maybe_unused]] SuspendedTaskEntry& entry) noexcept
{
#if TC_CHECKED
    Registry& registry = Registry::Instance();
    entry.suspendedAt_ = SteadyNowNanoseconds();
    entry.hangReported_ = false;
    const WaitTarget target = entry.callback_ ? entry.callback_->WaitedOn() : WaitTarget{};
    entry.callbackType_.store(target.type, std::memory_order_relaxed);
    entry.waitedOn_.store(target.object, std::memory_order_relaxed);
    entry.waitedOnName_.store(target.name, std::memory_order_relaxed);
    std::lock_guard guard(registry.lock);
    entry.hangPrev_ = nullptr;
    entry.hangNext_ = registry.head;
    if (registry.head)
        registry.head->hangPrev_ = &entry;
    else
        registry.tail = &entry;
    registry.head = &entry;
#endif
}

void UnregisterSuspended([[maybe_unused]] SuspendedTaskEntry& entry) noexcept
{
#if TC_CHECKED
    Registry& registry = Registry::Instance();
    std::lock_guard guard(registry.lock);
    if (entry.hangPrev_)
        entry.hangPrev_->hangNext_ = entry.hangNext_;
    else if (registry.head == &entry)
        registry.head = entry.hangNext_;
    if (entry.hangNext_)
        entry.hangNext_->hangPrev_ = entry.hangPrev_;
    else if (registry.tail == &entry)
        registry.tail = entry.hangPrev_;
    entry.hangPrev_ = entry.hangNext_ = nullptr;
#endif
}
void ForEachSuspended([[maybe_unused]] const std::function<void(const SuspendedTaskEntry&)>& visit)
{
#if TC_CHECKED
    Registry& registry = Registry::Instance();
    std::lock_guard guard(registry.lock);
    for (SuspendedTaskEntry* entry = registry.tail; entry; entry = entry->hangPrev_)
        visit(*entry);
#endif
}

void ForgetParkedEntry([[maybe_unused]] SuspendedTaskEntry& entry) noexcept
{
#if !TC_CHECKED
    UnlistParkedCoroutine(entry);
#else
    if (entry.state_.load(std::memory_order_acquire) == EntryState::Suspended)
    {
        // An untimed wait's handle may die with its primitive (a chain torn down whole); a timed
        // one's deadline lives in this frame, in the timer heap, and would fire into freed memory.
        TC_CHECK(entry.timer_ == nullptr, "coroutine destroyed during a timed wait",
                 "a coroutine frame was destroyed while suspended in SuspendTaskForAsync (or a "
                 "primitive's timed co_await); its deadline lives in the frame, so the timer "
                 "thread would fire into freed memory -- resume it (or let it time out) first");
        UnregisterSuspended(entry);
    }
#endif
}
} // namespace TC::detail

namespace TC
{
void SetRacePointHook(RacePointHook hook) noexcept
{
    detail::racePointHook.store(hook, std::memory_order_release);
}

std::string WaitedOnType(SuspendedTask waiter)
{
    return waiter ? detail::PrimitiveTypeOf(*waiter.Entry()) : std::string("?");
}

std::string DescribeWaiter(SuspendedTask waiter)
{
    return waiter ? detail::Describe(*waiter.Entry(), 0).waiter : std::string("?");
}

std::vector<SuspendedWaiterInfo> SnapshotSuspendedWaiters()
{
    std::vector<SuspendedWaiterInfo> waiters;
#if TC_CHECKED
    detail::Registry& registry = detail::Registry::Instance();
    const std::int64_t now = detail::SteadyNowNanoseconds();
    std::lock_guard guard(registry.lock);
    for (SuspendedTaskEntry* entry = registry.tail; entry; entry = entry->hangPrev_)
        waiters.push_back(detail::Describe(*entry, now));
#endif
    return waiters;
}

bool EnableHangReports([[maybe_unused]] Duration threshold)
{
#if TC_CHECKED
    detail::Registry& registry = detail::Registry::Instance();
    {
        std::lock_guard guard(registry.lock);
        registry.threshold = threshold.Nanoseconds();
        if (registry.watching)
        {
            registry.wake.notify_all();
            return true;
        }
        registry.watching = true;
    }
    registry.watchdog = std::thread(detail::Watch);
    return true;
#else
    return false;
#endif
}
} // namespace TC
