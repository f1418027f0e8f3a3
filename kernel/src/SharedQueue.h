#pragma once
// SharedQueue: the scheduler's shared run queue of items, moodycamel::ConcurrentQueue in a form
// ThreadSanitizer can follow. It keeps the queue's member names, so call sites read the same.

#include "Sanitizers.h"

#include <concurrentqueue.h>

#include <cstddef>
#include <cstdint>

#if TC_TSAN
extern "C"
{
    // ThreadSanitizer's dynamic annotations (its runtime defines them; no header declares them).
    void AnnotateIgnoreReadsBegin(const char* file, int line);
    void AnnotateIgnoreReadsEnd(const char* file, int line);
    void AnnotateIgnoreWritesBegin(const char* file, int line);
    void AnnotateIgnoreWritesEnd(const char* file, int line);
}
#endif

namespace TC::detail
{
/// A multi-producer, multi-consumer queue of std::uintptr_t.
/// - The queue hands its blocks between producers and consumers with relaxed atomics and
///   std::atomic_thread_fence. ThreadSanitizer does not model fences, so it would take the reuse
///   of a block's slot for a race. In a ThreadSanitizer build the plain memory accesses inside
///   each call are therefore not recorded (its atomics still are).
/// - The order the queue really gives -- an enqueue happens before the dequeue that takes its
///   item -- is the caller's to state (TsanRelease before each enqueue and TsanAcquire after
///   each successful dequeue, Scheduler.cpp): the items are what the caller hands over.
/// - Elsewhere it is the queue, unchanged.
class SharedQueue
{
public:
    // Queues `item`; false if the queue could not grow.
    bool enqueue(std::uintptr_t item) noexcept
    {
        [[maybe_unused]] const TsanScope scope;
        return queue_.enqueue(item);
    }

    // Queues `count` items from `first` (an input iterator) as one step: all or, when the queue
    // could not grow, none (false).
    template <class It>
    bool enqueue_bulk(It first, std::size_t count) noexcept
    {
        [[maybe_unused]] const TsanScope scope;
        return queue_.enqueue_bulk(first, count);
    }

    // Takes an item; false if none was found.
    bool try_dequeue(std::uintptr_t& item) noexcept
    {
        [[maybe_unused]] const TsanScope scope;
        return queue_.try_dequeue(item);
    }

    // The number of items, approximately (exact when nothing runs concurrently).
    std::size_t size_approx() const noexcept
    {
        [[maybe_unused]] const TsanScope scope;
        return queue_.size_approx();
    }

private:
    // Ignores the calling thread's plain reads and writes while it lives (a ThreadSanitizer build).
    struct TsanScope
    {
#if TC_TSAN
        TsanScope() noexcept
        {
            AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
            AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
        }
        ~TsanScope()
        {
            AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
            AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
        }
        TsanScope(const TsanScope&) = delete;
        TsanScope& operator=(const TsanScope&) = delete;
#endif
    };

    moodycamel::ConcurrentQueue<std::uintptr_t> queue_;
};
} // namespace TC::detail
