// No hidden threads: a host-pumped scheduler runs on its host only; a scheduler with workers
// adds exactly its workers; EnableTimers adds the one timer thread, once.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

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
} // namespace

TEST_CASE("the host thread is the main scheduler's only thread", "[threads]")
{
    // Sanitizer runtimes may start a helper thread of their own with the first thread the
    // process creates: let that happen before counting.
    std::thread([] {}).join();
    const std::size_t base = ThreadCount();
    {
        TC::Scheduler host;
        CHECK(ThreadCount() == base);
        auto [future, promise] = MakeFuture<int>();
        auto waiter = host.Start([f = std::move(future)]() mutable { CHECK(f.Wait() == 1); });
        host.Start([p = std::move(promise)]() mutable { p.SetValue(1); }).Detach();
        host.RunUntilIdle();
        waiter.Join();
        CHECK_FALSE(host.WaitForWork(std::chrono::milliseconds(1)));
        CHECK(ThreadCount() == base);
    }
    CHECK(ThreadCount() == base);
    {
        TC::Scheduler workers(2);
        CHECK(ThreadCount() == base + 2);
        workers.Start([] {}).Join();
        CHECK(ThreadCount() == base + 2);
    }
    CHECK(ThreadCount() == base);
    REQUIRE_FALSE(TC::TimersEnabled());
    TC::EnableTimers();
    CHECK(ThreadCount() == base + 1);
    TC::EnableTimers();
    CHECK(ThreadCount() == base + 1);
}
