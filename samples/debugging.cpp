// debugging: named tasks parked on several primitives, each in a function of its own, for
// guides/debugging.md. It prints TC::DumpTasks once every task is where it should be, calls
// ReadyForDebugger (where the gdb test stops it: `tc tasks`, `tc bt`, `tc task`), then lets every
// task go and checks that each one finished. Exits non-zero if a task is not in the state
// expected.

#include <TC/TC.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

namespace Sync = TC::Synchronization;
using namespace std::chrono_literals;

namespace
{
// Each in its own frame, so a backtrace names it. noinline: the frames stay in a -O2 build too.
[[gnu::noinline]] void WaitForGate(Sync::ManualResetEvent& gate)
{
    gate.Wait();
}

[[gnu::noinline]] void WaitForGroup(std::atomic<Sync::WaitGroup*>& published)
{
    Sync::WaitGroup group(1); // its creator waits on it; main calls Done
    published = &group;
    group.Wait();
}

[[gnu::noinline]] void WaitForLock(Sync::Mutex& mutex)
{
    const std::lock_guard hold(mutex);
}

[[gnu::noinline]] void WaitWithTimeout(Sync::Semaphore& permits)
{
    (void)permits.Acquire(TC::Duration(60s));
}

[[gnu::noinline]] void Compute(std::atomic<bool>& stop)
{
    while (!stop.load(std::memory_order_relaxed))
        std::this_thread::yield();
}

std::string Dump()
{
    std::ostringstream out;
    TC::DumpTasks(out);
    return out.str();
}

bool Shows(const std::string& dump, const char* name, const char* state)
{
    const std::size_t at = dump.find(std::string("'") + name + "' ");
    return at != std::string::npos && dump.compare(at + std::strlen(name) + 3, std::strlen(state), state) == 0;
}

bool AllParked(const std::string& dump)
{
    return Shows(dump, "gate-waiter", "suspended") && Shows(dump, "group-creator", "suspended") &&
           Shows(dump, "lock-waiter", "suspended") && Shows(dump, "timed-waiter", "suspended") &&
           Shows(dump, "spinner", "running") && Shows(dump, "finished", "finished");
}
} // namespace

// Where the gdb test stops the program: every task is parked or running as named above.
extern "C" [[gnu::noinline]] void ReadyForDebugger()
{
    asm volatile("" ::: "memory");
}

int main()
{
    TC::EnableTimers();
    TC::SchedulerOptions options;
    options.workerCount = 2;
    options.name = "debugging";
    TC::Scheduler scheduler(options);
    Sync::ManualResetEvent gate;
    std::atomic<Sync::WaitGroup*> group{nullptr};
    Sync::Mutex mutex;
    Sync::Semaphore permits(0);
    std::atomic<bool> stop{false};
    mutex.lock(); // held by main until the end: the lock waiter parks
    // [guide:named-tasks]
    TC::JoinHandle tasks[] = {
        scheduler.Start([&] { WaitForGate(gate); }, {.name = "gate-waiter"}),
        scheduler.Start([&] { WaitForGroup(group); }, {.name = "group-creator"}),
        scheduler.Start([&] { WaitForLock(mutex); }, {.name = "lock-waiter"}),
        scheduler.Start([&] { WaitWithTimeout(permits); }, {.name = "timed-waiter"}),
        scheduler.Start([&] { Compute(stop); }, {.name = "spinner"}),
        scheduler.Start([] {}, {.name = "finished"}),
    };
    // [/guide:named-tasks]
    std::string dump = Dump();
    const auto giveUp = std::chrono::steady_clock::now() + 60s;
    while (!AllParked(dump) && std::chrono::steady_clock::now() < giveUp)
    {
        std::this_thread::sleep_for(1ms);
        dump = Dump();
    }
    // [guide:dump]
    std::printf("%s", dump.c_str()); // dump: what TC::DumpTasks(out) wrote
    // [/guide:dump]
    const bool parked = AllParked(dump);
    ReadyForDebugger();

    gate.Set();
    while (!group.load())
        std::this_thread::yield();
    group.load()->Done();
    mutex.unlock();
    permits.Release();
    stop = true;
    for (TC::JoinHandle& task : tasks)
        task.Join();
    const std::string after = Dump();
    const bool gone = after.find("  task ") == std::string::npos; // no task line is left
    std::printf("every task parked as expected: %s; all finished and joined: %s\n",
                parked ? "yes" : "no", gone ? "yes" : "no");
    return parked && gone ? 0 : 1;
}
