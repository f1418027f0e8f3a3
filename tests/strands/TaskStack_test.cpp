// The native stack a Task await costs: none for a task that finishes during its start, however
// many run in a loop (in every build, tail calls or not), one activation per level for a nesting
// of starts, refused by name in checked mode beyond kTaskNestingLimit. And the handshake when a
// started task finishes on another thread while its awaiter is still deciding.

#include "DeathTest.h"
#include "StrandsTestSupport.h"

#include <TC/Checked.h>
#include <TC/Scheduler.h>

#include <catch2/catch.hpp>

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;

namespace
{
constexpr int kLoop = 1000000;
// Each nested level costs a few native frames, under 256 bytes in every preset (the nesting test
// reports it): a nesting as deep as the limit runs on a stack sized for it with room to spare,
// as a program recursing that deep would.
constexpr std::size_t kNestingStack = 16 * 1024 * 1024;

// ThreadSanitizer makes every level of a deep nesting slow (a 10 000-deep one takes seconds), so
// under it the WhenAll nesting, which reaches the same counting as the Task one, runs at a tenth
// of the limit and is not driven to a refusal.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSlowDeepNesting = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kSlowDeepNesting = true;
#else
constexpr bool kSlowDeepNesting = false;
#endif
#else
constexpr bool kSlowDeepNesting = false;
#endif

// The lowest and highest stack address a synchronously finishing child saw its local at.
struct StackSpan
{
    std::uintptr_t low = UINTPTR_MAX;
    std::uintptr_t high = 0;
    void Record(const void* address) noexcept
    {
        const auto at = reinterpret_cast<std::uintptr_t>(address);
        low = at < low ? at : low;
        high = at > high ? at : high;
    }
    std::uintptr_t Width() const noexcept { return high - low; }
};

// A task-returning push, as a producer would write one: it finishes without suspending.
Task<int> PushAsync(int value, StackSpan* span)
{
    volatile int local = value; // its address is where this activation sits on the stack
    span->Record(const_cast<const int*>(&local));
    co_return local + 1;
}

Task<void> Nothing()
{
    co_return;
}

Task<long> Producer(int count, StackSpan* span)
{
    long sum = 0;
    for (int i = 0; i < count; ++i)
    {
        sum += co_await PushAsync(i, span);
        co_await Nothing();
    }
    co_return sum;
}

long ExpectedSum(int count)
{
    return static_cast<long>(count) * (count + 1) / 2;
}

// Each level awaits the next: `depth` starts nested on one stack.
Task<int> Nested(int depth, StackSpan* span = nullptr)
{
    volatile int local = depth;
    if (span)
        span->Record(const_cast<const int*>(&local));
    if (depth == 0)
        co_return 0;
    co_return 1 + co_await Nested(depth - 1, span);
}

// The same nesting through WhenAll: each level a runner and a Task start.
Task<void> NestedJoin(int depth, int* leaves)
{
    if (depth == 0)
    {
        ++*leaves;
        co_return;
    }
    co_await WhenAll(NestedJoin(depth - 1, leaves));
}

// Runs `work` on a thread of its own whose stack is `bytes` long, and waits for it.
void RunOnStackOf(std::size_t bytes, const std::function<void()>& work)
{
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr) == 0);
    REQUIRE(pthread_attr_setstacksize(&attr, bytes) == 0);
    pthread_t thread;
    auto run = [](void* arg) -> void*
    {
        (*static_cast<const std::function<void()>*>(arg))();
        return nullptr;
    };
    const int created =
        pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&work));
    pthread_attr_destroy(&attr);
    REQUIRE(created == 0);
    REQUIRE(pthread_join(thread, nullptr) == 0);
}

// An executor with one thread of its own that resumes what it is given as soon as it can.
class ThreadExecutor final : public IExecutor
{
public:
    ThreadExecutor() : thread_([this] { Run(); }) {}
    ThreadExecutor(const ThreadExecutor&) = delete;
    ThreadExecutor& operator=(const ThreadExecutor&) = delete;
    ~ThreadExecutor()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        ready_.notify_one();
        thread_.join();
    }

    using IExecutor::Submit;
    void Submit(std::coroutine_handle<> handle) override { Submit(ParkedWork{handle, {}}); }
    void Submit(ParkedWork work) override
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.push_back(work.handle);
        }
        ready_.notify_one();
    }
    std::thread::id Id() const noexcept { return thread_.get_id(); }

private:
    void Run()
    {
        for (;;)
        {
            std::coroutine_handle<> next;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
                if (queue_.empty())
                    return;
                next = queue_.front();
                queue_.pop_front();
            }
            next.resume();
        }
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::coroutine_handle<>> queue_;
    bool stopping_ = false;
    std::thread thread_;
};

// Hops to `there` and returns `value` there: it finishes on that executor's thread, racing the
// awaiter, still in its start on another thread, for the handshake.
Task<int> FinishElsewhere(ThreadExecutor* there, int value)
{
    FrameSentinel sentinel;
    co_await ResumeOn{*there};
    co_return value;
}

struct RaceCounts
{
    long sum = 0;
    int continuedHere = 0;  // the child finished first: the awaiter went on in its own start
    int continuedThere = 0; // the awaiter suspended first: the child's end resumed it
};

Task<void> Racer(ThreadExecutor* here, ThreadExecutor* there, int count, RaceCounts* counts)
{
    FrameSentinel sentinel;
    for (int i = 1; i <= count; ++i)
    {
        co_await ResumeOn{*here};
        counts->sum += co_await FinishElsewhere(there, i);
        if (std::this_thread::get_id() == here->Id())
            ++counts->continuedHere;
        else
            ++counts->continuedThere;
    }
}

DetachedTask RunRacer(ThreadExecutor* here, ThreadExecutor* there, int count, RaceCounts* counts,
                      std::atomic<bool>* finished)
{
    co_await Racer(here, there, count, counts);
    finished->store(true, std::memory_order_release);
    finished->notify_one();
}
} // namespace

TEST_CASE("A loop of synchronously finishing awaits runs in constant stack on a plain thread",
          "[strands][stack]")
{
    StackSpan span;
    CHECK(SyncRun(Producer(kLoop, &span)) == ExpectedSum(kLoop));
    // Every child ran at the same depth: the loop did not nest one activation per await.
    CHECK(span.Width() == 0);
}

TEST_CASE("A loop of synchronously finishing awaits runs in a task with a 64 KiB stack",
          "[strands][stack]")
{
    SchedulerOptions options;
    options.workerCount = 1;
    Scheduler scheduler(options);
    long sum = 0;
    StackSpan span;
    TaskOptions task;
    task.name = "producer";
    task.stackSize = 64 * 1024;
    scheduler.Start([&] { sum = SyncRun(Producer(kLoop, &span)); }, task).Join();
    CHECK(sum == ExpectedSum(kLoop));
    CHECK(span.Width() == 0);
}

TEST_CASE("A loop of WhenAll over synchronously finishing tasks runs in constant stack",
          "[strands][stack]")
{
    auto loop = [](int count, StackSpan* span) -> Task<long>
    {
        long sum = 0;
        for (int i = 0; i < count; ++i)
        {
            co_await WhenAll(Nothing(), Nothing());
            (void)co_await WhenAny(Nothing());
            sum += co_await PushAsync(i, span);
        }
        co_return sum;
    };
    StackSpan span;
    const int count = TCTest::Scaled(100000);
    CHECK(SyncRun(loop(count, &span)) == ExpectedSum(count));
    CHECK(span.Width() == 0);
}

TEST_CASE("A task that finishes on another thread while its awaiter decides hands over once",
          "[strands][stack]")
{
    REQUIRE(FrameSentinel::live.load() == 0);
    const int count = TCTest::Scaled(20000);
    RaceCounts counts;
    {
        ThreadExecutor here;
        ThreadExecutor there;
        std::atomic<bool> finished{false};
        RunRacer(&here, &there, count, &counts, &finished);
        finished.wait(false, std::memory_order_acquire);
    } // both threads joined: nothing of the chain runs any more
    INFO("continued in the start: " << counts.continuedHere
                                    << ", resumed by the child: " << counts.continuedThere);
    CHECK(counts.sum == ExpectedSum(count));
    CHECK(counts.continuedHere + counts.continuedThere == count);
    CHECK(FrameSentinel::live.load() == 0);
}

TEST_CASE("A nesting of Task starts up to kTaskNestingLimit runs in every build",
          "[strands][stack]")
{
    const int depth = static_cast<int>(kTaskNestingLimit);
    int nested = -1;
    int leaves = 0;
    StackSpan span;
    RunOnStackOf(kNestingStack,
                 [&]
                 {
                     nested = SyncRun(Nested(depth, &span));
                     // Each WhenAll level counts twice: its runner and the Task it starts.
                     SyncRun(NestedJoin(kSlowDeepNesting ? depth / 20 : depth / 2, &leaves));
                 });
    CHECK(nested == depth);
    CHECK(leaves == 1);
    // What one level cost here, for the guide's sizing advice.
    INFO("native stack per nested level: " << span.Width() / static_cast<std::uintptr_t>(depth)
                                           << " bytes");
    CHECK(span.Width() < kNestingStack);
}

TEST_CASE("Checked mode refuses a nesting of Task starts beyond kTaskNestingLimit by name",
          "[strands][stack]")
{
    if (!IsCheckedBuild())
    {
        SUCCEED("checked mode is off in this build: nothing refuses the nesting");
        return;
    }
    // On a stack that holds the limit, so the refusal comes before any overflow could.
    const auto deep = TestSupport::RunInChild(
        [] { RunOnStackOf(kNestingStack, [] { (void)SyncRun(Nested(100000)); }); });
    TestSupport::RequireRule(deep, "Task awaits nested too deep");
    if (kSlowDeepNesting)
        return;
    const auto joined = TestSupport::RunInChild(
        []
        {
            int leaves = 0;
            RunOnStackOf(kNestingStack, [&] { SyncRun(NestedJoin(100000, &leaves)); });
        });
    TestSupport::RequireRule(joined, "Task awaits nested too deep");
}
