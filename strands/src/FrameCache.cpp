// The per-thread cache of Task frames. A frame freed on a thread is the next one of its 16-byte
// size class (up to 1 KiB) that thread allocates; each thread keeps up to kKeep per class in
// lists threaded through the frames themselves. Nothing is shared, so a frame freed on another
// thread than its allocator's simply joins that thread's cache. At thread exit the cache is
// emptied and frames freed later go straight to the heap. Larger frames, and every frame in an
// AddressSanitizer build (which must see each frame's use after free), use operator new.
// Every frame has a 16-byte header before it naming its allocator: nullptr for the cache and the
// heap, else the FrameAllocatorScope's allocator it came from, where it goes back.

#include <TC/Checked.h>
#include <TC/Strands/FrameAllocator.h>
#include <TC/Strands/detail/FrameCache.h>

#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define TC_FRAME_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TC_FRAME_CACHE 0
#endif
#endif
#ifndef TC_FRAME_CACHE
#define TC_FRAME_CACHE 1
#endif

namespace TC::detail
{
namespace
{
constexpr std::size_t kGranule = 16;
constexpr std::size_t kClasses = 65; // frames up to 1 KiB, with their header
constexpr unsigned kKeep = 64;       // frames kept per class and thread

// The header before each frame: its allocator, nullptr for the cache and the heap.
constexpr std::size_t kHeader = 16;
static_assert(kHeader >= 2 * sizeof(void*) && kHeader % __STDCPP_DEFAULT_NEW_ALIGNMENT__ == 0);

// A cached block's link sits after the header, which keeps the nullptr it got when the block was
// made: a frame from the cache needs no header store.
void*& LinkOf(void* block) noexcept
{
    return *static_cast<void**>(static_cast<void*>(static_cast<unsigned char*>(block) + sizeof(void*)));
}

// Constant-initialised and trivially destructible: reached without a guard on every call.
struct FrameCache
{
    void* heads[kClasses];
    unsigned counts[kClasses];
    IBlockAllocator* allocator; // the innermost FrameAllocatorScope's, or nullptr
    bool registered; // the thread-exit drain is armed
    bool closed;     // the thread is exiting: the cache keeps nothing more
};
thread_local constinit FrameCache cache{};

// Empties the cache as its thread exits.
struct FrameCacheDrain
{
    bool armed = false;
    ~FrameCacheDrain()
    {
        cache.closed = true;
        for (std::size_t index = 0; index < kClasses; ++index)
            while (void* block = cache.heads[index])
            {
                cache.heads[index] = LinkOf(block);
                ::operator delete(block);
            }
    }
};
thread_local FrameCacheDrain drain;

std::size_t ClassOf(std::size_t size) noexcept
{
    return (size + kGranule - 1) / kGranule - 1;
}

IBlockAllocator*& AllocatorOf(void* block) noexcept
{
    return *static_cast<IBlockAllocator**>(block);
}

[[gnu::noinline]] void* AllocateFrom(IBlockAllocator& allocator, std::size_t bytes)
{
    void* block = allocator.Allocate(bytes, kHeader);
    AllocatorOf(block) = &allocator;
    return static_cast<unsigned char*>(block) + kHeader;
}

[[gnu::noinline]] void* AllocateNew(std::size_t bytes)
{
    void* block = ::operator new(bytes);
    AllocatorOf(block) = nullptr;
    return static_cast<unsigned char*>(block) + kHeader;
}

[[gnu::noinline]] void FreeTo(IBlockAllocator& allocator, void* block, std::size_t bytes) noexcept
{
    allocator.Free(block, bytes, kHeader);
}
} // namespace

void* AllocateFrame(std::size_t size)
{
    const std::size_t bytes = size + kHeader;
    FrameCache& local = cache;
    if (IBlockAllocator* allocator = local.allocator) [[unlikely]]
        return AllocateFrom(*allocator, bytes);
    const std::size_t index = ClassOf(bytes);
    if (!TC_FRAME_CACHE || index >= kClasses)
        return AllocateNew(bytes);
    if (void* block = local.heads[index])
    {
        local.heads[index] = LinkOf(block);
        --local.counts[index];
        return static_cast<unsigned char*>(block) + kHeader;
    }
    return AllocateNew((index + 1) * kGranule); // any frame of its class fits the block
}

void FreeFrame(void* frame, std::size_t size) noexcept
{
    void* block = static_cast<unsigned char*>(frame) - kHeader;
    if (IBlockAllocator* allocator = AllocatorOf(block)) [[unlikely]]
        return FreeTo(*allocator, block, size + kHeader);
    const std::size_t index = ClassOf(size + kHeader);
    FrameCache& local = cache;
    if (!TC_FRAME_CACHE || index >= kClasses || local.closed || local.counts[index] >= kKeep)
        return ::operator delete(block);
    if (!local.registered)
    {
        local.registered = true;
        drain.armed = true; // the first use registers its destructor for this thread's exit
    }
    LinkOf(block) = local.heads[index];
    local.heads[index] = block;
    ++local.counts[index];
}

IBlockAllocator* ExchangeFrameAllocator(IBlockAllocator* allocator) noexcept
{
    IBlockAllocator* previous = cache.allocator;
    cache.allocator = allocator;
    return previous;
}

void EndFrameAllocatorScope(IBlockAllocator* allocator, IBlockAllocator* previous) noexcept
{
    if (cache.allocator != allocator) [[unlikely]]
        ReportRuleViolation("FrameAllocatorScope ends in reverse order on the thread that made it",
                            "the thread's innermost scope names another allocator");
    cache.allocator = previous;
}
} // namespace TC::detail
