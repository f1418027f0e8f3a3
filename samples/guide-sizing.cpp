// guide-sizing: the measurements of the "Lifetimes and sizing" guide -- sizeof of the main types
// on this platform, the stack size classes, the mapping limit a guard page counts against, and
// more waiters on one Multiple primitive than a 16-bit count could hold. Prints the table and
// exits non-zero if a check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <vector>

namespace Sync = TC::Synchronization;

namespace
{
int failures = 0;

void Check(bool ok, const char* what)
{
    std::printf("%-62s %s\n", what, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
}

#define TC_PRINT_SIZE(type) std::printf("  %-40s %4zu bytes\n", #type, sizeof(type))

// Waits on the gate with nothing but its frame: no stack, no allocation beyond the frame.
TC::Strands::DetachedTask Waiter(Sync::ManualResetEvent* gate, std::atomic<int>* passed)
{
    co_await *gate;
    ++*passed;
}
} // namespace

int main()
{
    std::printf("sizeof on this platform:\n");
    // [guide:sizes]
    TC_PRINT_SIZE(TC::SuspendedTask);
    TC_PRINT_SIZE(TC::SuspendedTaskEntry);
    TC_PRINT_SIZE(TC::Duration);
    TC_PRINT_SIZE(TC::JoinHandle);
    TC_PRINT_SIZE(TC::Scheduler);
    TC_PRINT_SIZE(TC::SuspendAwaiter);
    TC_PRINT_SIZE(TC::SuspendForAwaiter);
    TC_PRINT_SIZE(Sync::AutoResetEvent_s);
    TC_PRINT_SIZE(Sync::ManualResetEvent_s);
    TC_PRINT_SIZE(Sync::AutoResetEvent);
    TC_PRINT_SIZE(Sync::ManualResetEvent);
    TC_PRINT_SIZE(Sync::Latch);
    TC_PRINT_SIZE(Sync::WaitGroup);
    TC_PRINT_SIZE(Sync::Semaphore);
    TC_PRINT_SIZE(Sync::Barrier);
    TC_PRINT_SIZE(Sync::Mutex);
    TC_PRINT_SIZE(Sync::ConditionVariable);
    TC_PRINT_SIZE(Sync::Mailbox<int>);
    TC_PRINT_SIZE(Sync::Channel<int>);
    TC_PRINT_SIZE(TC::Strands::Task<int>);
    TC_PRINT_SIZE(TC::Strands::Strand);
    TC_PRINT_SIZE(TC::Strands::AsyncQueue<int>);
    // [/guide:sizes]
    Check(sizeof(TC::SuspendedTask) == sizeof(void*), "a SuspendedTask is one pointer");
    Check(sizeof(Sync::ManualResetEvent_s) <= 2 * sizeof(void*),
          "ManualResetEvent_s is one atomic word (plus its callback's vtable pointer)");
    Check(sizeof(Sync::AutoResetEvent_s) <= sizeof(void*) + 2 * sizeof(std::uint64_t),
          "AutoResetEvent_s is its setters' word and its waiter's (plus the vtable pointer)");

    std::printf("stack size classes: Small %zu KiB, Medium %zu KiB (default), Large %zu KiB\n",
                TC::StackSize::Small / 1024, TC::StackSize::Medium / 1024,
                TC::StackSize::Large / 1024);
    long maxMapCount = 0;
    std::ifstream("/proc/sys/vm/max_map_count") >> maxMapCount;
    std::printf("vm.max_map_count: %ld (a guarded stack uses two mappings)\n", maxMapCount);

    {
        // [guide:many-tasks]
        // 2000 tasks with 16 KiB stacks and no guard page, all suspended on one Latch at once.
        TC::SchedulerOptions options;
        options.workerCount = 2;
        options.stackSize = TC::StackSize::Small;
        options.stackGuard = TC::StackGuard::None; // no extra mapping per stack
        TC::Scheduler scheduler(options);
        Sync::Latch go(1);
        std::atomic<int> passed{0};
        std::vector<TC::JoinHandle> tasks;
        for (int i = 0; i < 2000; ++i)
            tasks.push_back(scheduler.Start(
                [&]
                {
                    go.Wait();
                    ++passed;
                }));
        go.CountDown();
        for (TC::JoinHandle& task : tasks)
            task.Join();
        // [/guide:many-tasks]
        Check(passed == 2000, "2000 small-stack tasks waited on one Latch");
    }

    {
        // [guide:many-waiters]
        // 100 000 coroutines suspended on one ManualResetEvent: a multi-waiter event has no
        // limit on its waiters, and a coroutine's wait costs its frame and nothing else.
        Sync::ManualResetEvent gate;
        std::atomic<int> passed{0};
        for (int i = 0; i < 100000; ++i)
            Waiter(&gate, &passed); // each parks at once
        gate.Set();                 // no executor was current: each continues inline, here
        // [/guide:many-waiters]
        Check(passed == 100000, "100000 waiters on one ManualResetEvent, all resumed");
    }

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
