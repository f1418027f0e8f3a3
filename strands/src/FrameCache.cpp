// The per-thread cache of Task frames. A frame freed on a thread is the next one of its 16-byte
// size class (up to 1 KiB) that thread allocates; each thread keeps up to kKeep per class in
// lists threaded through the frames themselves. Nothing is shared, so a frame freed on another
// thread than its allocator's simply joins that thread's cache. At thread exit the cache is
// emptied and frames freed later go straight to the heap. Larger frames, and every frame in an
// AddressSanitizer build (which must see each frame's use after free), use operator new.

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
constexpr std::size_t kClasses = 64; // sizes up to 1 KiB
constexpr unsigned kKeep = 64;       // frames kept per class and thread

struct FreeFrameLink
{
    FreeFrameLink* next;
};

// Constant-initialised and trivially destructible: reached without a guard on every call.
struct FrameCache
{
    FreeFrameLink* heads[kClasses];
    unsigned counts[kClasses];
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
            while (FreeFrameLink* frame = cache.heads[index])
            {
                cache.heads[index] = frame->next;
                ::operator delete(frame);
            }
    }
};
thread_local FrameCacheDrain drain;

std::size_t ClassOf(std::size_t size) noexcept
{
    return (size + kGranule - 1) / kGranule - 1;
}
} // namespace

void* AllocateFrame(std::size_t size)
{
    const std::size_t index = ClassOf(size);
    if (!TC_FRAME_CACHE || index >= kClasses)
        return ::operator new(size);
    if (FreeFrameLink* frame = cache.heads[index])
    {
        cache.heads[index] = frame->next;
        --cache.counts[index];
        return frame;
    }
    return ::operator new((index + 1) * kGranule); // any frame of its class fits the block
}

void FreeFrame(void* frame, std::size_t size) noexcept
{
    const std::size_t index = ClassOf(size);
    if (!TC_FRAME_CACHE || index >= kClasses || cache.closed || cache.counts[index] >= kKeep)
        return ::operator delete(frame);
    if (!cache.registered)
    {
        cache.registered = true;
        drain.armed = true; // the first use registers its destructor for this thread's exit
    }
    auto* link = static_cast<FreeFrameLink*>(frame);
    link->next = cache.heads[index];
    cache.heads[index] = link;
    ++cache.counts[index];
}
} // namespace TC::detail
