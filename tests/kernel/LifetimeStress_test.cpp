// Who frees a task's block and a scheduler's state, under races: a JoinHandle released on
// another thread (joined, detached or dropped) while its task ends, and handles released in
// bulk after their Scheduler is gone. ASan/LSan see a double free or a lost one; checked mode
// and TSan see the rest; the counts below see a task that never ran or ran twice.

#include "TestMailbox.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace TC;
using TestSupport::Scaled;

namespace
{
// Handles passed from the starting thread to the releasing threads.
class HandleQueue
{
public:
    void Push(JoinHandle handle, long index)
    {
        std::lock_guard lock(lock_);
        queue_.emplace_back(std::move(handle), index);
    }
    void Close()
    {
        std::lock_guard lock(lock_);
        closed_ = true;
    }
    // False once closed and drained.
    bool Pop(JoinHandle& handle, long& index)
    {
        for (;;)
        {
            {
                std::lock_guard lock(lock_);
                if (!queue_.empty())
                {
                    handle = std::move(queue_.front().first);
                    index = queue_.front().second;
                    queue_.pop_front();
                    return true;
                }
                if (closed_)
                    return false;
            }
            std::this_thread::yield();
        }
    }

private:
    std::mutex lock_;
    std::deque<std::pair<JoinHandle, long>> queue_;
    bool closed_ = false;
};
} // namespace

TEST_CASE("Stress: JoinHandles released on other threads race the ends of their tasks")
{
    // Every task ends about when its handle reaches a releaser, so both orders happen often:
    // the task's end frees the block of a handle that let go first, the handle frees the block
    // of a task that ended first. Every seventh task throws and is joined (the rethrow is
    // counted); the others are joined, detached or dropped in turn.
    const long count = Scaled(1000000);
    std::atomic<long> ran{0};
    std::atomic<long> rethrown{0};
    std::atomic<long> joined{0};
    std::atomic<long> released{0};
    {
        Scheduler scheduler(2);
        HandleQueue handles;
        auto release = [&]
        {
            JoinHandle handle;
            long index = 0;
            while (handles.Pop(handle, index))
            {
                if (index % 7 == 0)
                {
                    try
                    {
                        handle.Join();
                    }
                    catch (const std::runtime_error&)
                    {
                        ++rethrown;
                    }
                }
                else if (index % 3 == 0)
                {
                    handle.Join();
                    ++joined;
                }
                else if (index % 3 == 1)
                    handle.Detach();
                else
                    handle = JoinHandle(); // dropped: detaches
                released.fetch_add(1, std::memory_order_relaxed);
            }
        };
        std::thread first(release);
        std::thread second(release);
        for (long i = 0; i < count; ++i)
        {
            while (i - released.load(std::memory_order_relaxed) > 4096)
                std::this_thread::yield(); // keep the tasks in flight (and their memory) bounded
            handles.Push(scheduler.Start(
                             [&ran, i]
                             {
                                 ran.fetch_add(1, std::memory_order_relaxed);
                                 if (i % 7 == 0)
                                     throw std::runtime_error("seventh");
                             }),
                         i);
        }
        handles.Close();
        first.join();
        second.join();
        // Detached tasks may still be ending; ~Scheduler waits for them.
    }
    REQUIRE(ran == count);
    REQUIRE(rethrown == (count + 6) / 7);
    long expectJoined = 0;
    for (long i = 0; i < count; ++i)
        expectJoined += i % 7 != 0 && i % 3 == 0 ? 1 : 0;
    REQUIRE(joined == expectJoined);
}

TEST_CASE("Stress: thousands of JoinHandles released on two threads after their Scheduler is gone")
{
    // The scheduler's state outlives ~Scheduler while any handle holds a task's block; the last
    // release frees it, once. Half the handles are joined, half dropped, from two threads at once.
    const int rounds = static_cast<int>(Scaled(50));
    for (int round = 0; round < rounds; ++round)
    {
        std::vector<JoinHandle> handles;
        std::atomic<int> ran{0};
        {
            std::optional<Scheduler> scheduler(std::in_place, 2u);
            // Some started from outside (the scheduler's pool), some from a task (a worker's
            // cache), so both kinds of block are outstanding when the scheduler goes.
            for (int i = 0; i < 1000; ++i)
                handles.push_back(scheduler->Start([&ran] { ++ran; }));
            std::mutex lock;
            scheduler
                ->Start(
                    [&]
                    {
                        for (int i = 0; i < 1000; ++i)
                        {
                            JoinHandle handle = scheduler->Start([&ran] { ++ran; });
                            std::lock_guard guard(lock);
                            handles.push_back(std::move(handle));
                        }
                    })
                .Join();
            REQUIRE(scheduler->LiveTasks() <= 2000);
        } // ~Scheduler: waits for every task, and leaves its state to the handles
        REQUIRE(ran == 2000);
        std::atomic<int> released{0};
        auto release = [&](std::size_t from)
        {
            for (std::size_t i = from; i < handles.size(); i += 2)
            {
                if (i % 4 < 2)
                    handles[i].Join();
                else
                    handles[i] = JoinHandle();
                ++released;
            }
        };
        std::thread other(release, std::size_t{1});
        release(0);
        other.join();
        REQUIRE(released == 2000);
    }
}
