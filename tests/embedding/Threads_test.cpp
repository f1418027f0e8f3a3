// No hidden threads: a host-pumped scheduler runs on its host only; a scheduler with workers
// adds exactly its workers; EnableTimers adds the one timer thread, once.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

using TC::Synchronization::MakeFuture;

namespace
{
std::size_t ThreadCount()
{
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/task"))
        ++count;
    return count;
}

// The count once it has held for 10 ms (at most 2 s): a joined thread may still be listed for a
// moment after pthread_join returns, a started one not yet -- under an emulator (qemu-user) for
// long enough that single reads failed the checks below. The claim is about the steady state.
std::size_t SettledThreadCount()
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    std::size_t last = ThreadCount();
    for (int unchanged = 0; unchanged < 10 && Clock::now() < deadline;)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const std::size_t now = ThreadCount();
        unchanged = now == last ? unchanged + 1 : 0;
        last = now;
    }
    return last;
}
} // namespace

TEST_CASE("the host thread is the main scheduler's only thread", "[threads]")
{
    // Sanitizer runtimes may start a helper thread of their own with the first thread the
    // process creates: let that happen before counting.
    std::thread([] {}).join();
    const std::size_t base = SettledThreadCount();
    {
        TC::Scheduler host;
        CHECK(SettledThreadCount() == base);
        auto [future, promise] = MakeFuture<int>();
        auto waiter = host.Start([f = std::move(future)]() mutable { CHECK(f.Wait() == 1); });
        host.Start([p = std::move(promise)]() mutable { p.SetValue(1); }).Detach();
        host.RunUntilIdle();
        waiter.Join();
        CHECK_FALSE(host.WaitForWork(std::chrono::milliseconds(1)));
        CHECK(SettledThreadCount() == base);
    }
    CHECK(SettledThreadCount() == base);
    {
        TC::Scheduler workers(2);
        CHECK(SettledThreadCount() == base + 2);
        workers.Start([] {}).Join();
        CHECK(SettledThreadCount() == base + 2);
    }
    CHECK(SettledThreadCount() == base);
    REQUIRE_FALSE(TC::TimersEnabled());
    TC::EnableTimers();
    CHECK(SettledThreadCount() == base + 1);
    TC::EnableTimers();
    CHECK(SettledThreadCount() == base + 1);
}
