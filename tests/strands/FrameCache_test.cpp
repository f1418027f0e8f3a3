// Task frames come from a per-thread cache (TC/Strands/detail/FrameCache.h): a frame freed on a
// thread is the next of its size class that thread allocates; frames above 1 KiB, and every
// frame in an AddressSanitizer build of the library, go to operator new each time; a thread
// keeps at most 64 per class; what a thread kept is freed as it exits. Its own executable: it
// replaces the global operator new and delete to count them.

#include "StrandsTestSupport.h"

#include <TC/Strands/SyncRun.h>
#include <TC/Strands/Task.h>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace
{
std::atomic<long> gNews{0};
std::atomic<long> gDeletes{0};

void* Allocate(std::size_t size)
{
    gNews.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}
void* AllocateAligned(std::size_t size, std::align_val_t alignment)
{
    gNews.fetch_add(1, std::memory_order_relaxed);
    const auto align = static_cast<std::size_t>(alignment);
    if (void* p = std::aligned_alloc(align, (size + align - 1) / align * align))
        return p;
    throw std::bad_alloc();
}
void Free(void* p) noexcept
{
    if (p)
        gDeletes.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
}
} // namespace

// Every replaceable form, so that nothing allocated here is freed by another allocator.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    try
    {
        return Allocate(size);
    }
    catch (...)
    {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept
{
    return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t alignment)
{
    return AllocateAligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment)
{
    return AllocateAligned(size, alignment);
}
void operator delete(void* p, const std::nothrow_t&) noexcept
{
    Free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept
{
    Free(p);
}
void operator delete(void* p, std::align_val_t) noexcept
{
    Free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept
{
    Free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept
{
    Free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept
{
    Free(p);
}

void* operator new(std::size_t size)
{
    return Allocate(size);
}
void* operator new[](std::size_t size)
{
    return Allocate(size);
}
void operator delete(void* p) noexcept
{
    Free(p);
}
void operator delete[](void* p) noexcept
{
    Free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    Free(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    Free(p);
}

namespace
{
using TC::Strands::Task;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCached = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCached = false;
#else
constexpr bool kCached = true;
#endif
#else
constexpr bool kCached = true;
#endif

Task<int> Small(int value)
{
    co_return value + 1;
}

// Its buffer lives across a suspension point, so it is in the frame: well above 1 KiB.
Task<int> Large(int value)
{
    std::array<volatile char, 2048> buffer{};
    buffer[static_cast<std::size_t>(value) % buffer.size()] = 1;
    co_await std::suspend_never{};
    co_return static_cast<int>(buffer[static_cast<std::size_t>(value) % buffer.size()]) + value;
}

long News() noexcept
{
    return gNews.load(std::memory_order_relaxed);
}
long Live() noexcept
{
    return gNews.load(std::memory_order_relaxed) - gDeletes.load(std::memory_order_relaxed);
}

// Runs `body` on a fresh thread (an empty cache) and returns the operator new calls it made.
template <class Body>
long NewsOnFreshThread(Body body)
{
    long made = 0;
    std::thread thread(
        [&]
        {
            const long before = News();
            body();
            made = News() - before;
        });
    thread.join();
    return made;
}
} // namespace

TEST_CASE("A Task frame freed on a thread is the next one of its size the thread allocates",
          "[strands][framecache]")
{
    const long made = NewsOnFreshThread(
        []
        {
            for (int i = 0; i < 1000; ++i)
            {
                Task<int> task = Small(i);
                REQUIRE(TC::Strands::SyncRun(std::move(task)) == i + 1);
            }
        });
    // SyncRun itself allocates nothing: every allocation counted is a frame.
    CHECK(made == (kCached ? 1 : 1000));
}

TEST_CASE("Frames above 1 KiB are allocated each time", "[strands][framecache]")
{
    const long made = NewsOnFreshThread(
        []
        {
            for (int i = 0; i < 100; ++i)
                REQUIRE(TC::Strands::SyncRun(Large(i)) == i + 1);
        });
    CHECK(made == 100);
}

TEST_CASE("A thread keeps at most 64 frames of a size", "[strands][framecache]")
{
    const long made = NewsOnFreshThread(
        []
        {
            for (int round = 0; round < 2; ++round)
            {
                std::vector<Task<int>> tasks;
                tasks.reserve(100);
                for (int i = 0; i < 100; ++i)
                    tasks.push_back(Small(i));
            }
        });
    // The vector's buffer each round, 100 frames, then 36 past the 64 kept.
    CHECK(made == (kCached ? 2 + 100 + 36 : 2 + 200));
}

TEST_CASE("A frame freed on another thread joins that thread's cache", "[strands][framecache]")
{
    std::vector<Task<int>> tasks;
    tasks.reserve(32);
    for (int i = 0; i < 32; ++i)
        tasks.push_back(Small(i));
    const long made = NewsOnFreshThread(
        [&]
        {
            tasks.clear(); // frees the frames here
            for (int i = 0; i < 32; ++i)
                REQUIRE(TC::Strands::SyncRun(Small(i)) == i + 1);
        });
    CHECK(made == (kCached ? 0 : 32));
}

TEST_CASE("What a thread's cache kept is freed as the thread exits", "[strands][framecache]")
{
    const long before = Live();
    std::thread thread(
        []
        {
            std::vector<Task<int>> tasks;
            for (int i = 0; i < 64; ++i)
                tasks.push_back(Small(i));
        });
    thread.join();
    CHECK(Live() == before);
}

TEST_CASE("Frames handed between threads: a million made on one, freed on another",
          "[strands][framecache]")
{
    const long total = static_cast<long>(TCTest::Scaled(1'000'000));
    constexpr std::size_t kBatch = 100;
    std::mutex mutex;
    std::vector<std::vector<Task<int>>> batches;
    std::atomic<bool> done{false};
    long sum = 0;
    std::thread consumer(
        [&]
        {
            for (;;)
            {
                std::vector<std::vector<Task<int>>> taken;
                {
                    std::lock_guard lock(mutex);
                    taken.swap(batches);
                }
                for (auto& batch : taken)
                    for (Task<int>& task : batch)
                        sum += TC::Strands::SyncRun(std::move(task));
                if (taken.empty() && done.load())
                {
                    std::lock_guard lock(mutex);
                    if (batches.empty())
                        return;
                }
            }
        });
    long expected = 0;
    for (long made = 0; made < total;)
    {
        std::vector<Task<int>> batch;
        batch.reserve(kBatch);
        for (std::size_t i = 0; i < kBatch && made < total; ++i, ++made)
        {
            batch.push_back(made % 2 ? Small(1) : Large(1));
            expected += 2;
        }
        std::lock_guard lock(mutex);
        batches.push_back(std::move(batch));
    }
    done = true;
    consumer.join();
    CHECK(sum == expected);
}
