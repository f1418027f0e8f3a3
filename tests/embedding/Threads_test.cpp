// No hidden threads: a host-pumped scheduler runs on its host only; a scheduler with workers
// adds exactly its workers; EnableTimers adds the one timer thread, once.

#include <TC/Core.h>
#include <TC/Synchronization/Future.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <sys/syscall.h>
#include <system_error>
#include <thread>
#include <unistd.h>

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

// The count once it has been `expected` for 10 ms running, or the last one read after 10 s: a
// joined thread may still be listed for a while after pthread_join returns (an exiting thread
// descheduled on a loaded machine, or under qemu-user), so a count merely stable for a moment
// could still include it. The claim is about the steady state; a thread too many stays listed.
std::size_t SettledThreadCount(std::size_t expected)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    std::size_t last = ThreadCount();
    for (int held = 0; held < 10 && Clock::now() < deadline;)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        last = ThreadCount();
        held = last == expected ? held + 1 : 0;
    }
    return last;
}

// The thread count before the test's threads, once it has held for 10 ms. A first thread is
// started and joined before, since a sanitizer runtime may start a helper thread of its own with
// it, and counting waits until that thread has left /proc, which only a steady count cannot show.
std::size_t BaseThreadCount()
{
    using Clock = std::chrono::steady_clock;
    std::atomic<long> helper{0};
    std::thread([&] { helper = static_cast<long>(syscall(SYS_gettid)); }).join();
    const std::string entry = "/proc/self/task/" + std::to_string(helper.load());
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    std::error_code error;
    while (std::filesystem::exists(entry, error) && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
    const std::size_t base = BaseThreadCount();
    {
        TC::Scheduler host;
        CHECK(SettledThreadCount(base) == base);
        auto [future, promise] = MakeFuture<int>();
        auto waiter = host.Start([f = std::move(future)]() mutable { CHECK(f.Wait() == 1); });
        host.Start([p = std::move(promise)]() mutable { p.SetValue(1); }).Detach();
        host.RunUntilIdle();
        waiter.Join();
        CHECK_FALSE(host.WaitForWork(std::chrono::milliseconds(1)));
        CHECK(SettledThreadCount(base) == base);
    }
    CHECK(SettledThreadCount(base) == base);
    {
        TC::Scheduler workers(2);
        CHECK(SettledThreadCount(base + 2) == base + 2);
        workers.Start([] {}).Join();
        CHECK(SettledThreadCount(base + 2) == base + 2);
    }
    CHECK(SettledThreadCount(base) == base);
    REQUIRE_FALSE(TC::TimersEnabled());
    TC::EnableTimers();
    CHECK(SettledThreadCount(base + 1) == base + 1);
    TC::EnableTimers();
    CHECK(SettledThreadCount(base + 1) == base + 1);
}
