#pragma once
// ParallelFor: runs a body over an index range on a scheduler's workers and the calling thread,
// splitting the range as the work goes; returns once every index has been run.
//
//     TC::ParallelFor(scheduler, {0, values.size()}, 1024, [&](TC::IndexRange chunk) {
//         for (std::size_t i = chunk.begin; i < chunk.end; ++i)
//             values[i] *= 2.0f;
//     });

#include <TC/Scheduler.h>
#include <TC/detail/Export.h>

#include <cstddef>
#include <memory>
#include <type_traits>

namespace TC
{
// Indices [begin, end).
struct IndexRange
{
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t Size() const noexcept { return end > begin ? end - begin : 0; }
};

namespace detail
{
using ChunkCall = void (*)(void* body, IndexRange chunk);
TC_API void RunParallelFor(Scheduler& scheduler, IndexRange range, std::size_t grain, ChunkCall call,
                           void* body, const TaskOptions& helperOptions);
} // namespace detail

// Calls body(chunk) for chunks that together cover `range` once, and returns when all have run.
/// - Who runs chunks: the caller, and one helper task per worker of `scheduler` (one fewer when
///   the caller is a task of it), started as one bulk start with `helperOptions`. Chunks are work
///   items, not tasks: a chunk runs on its participant's stack, so the call takes one stack per
///   helper whatever the chunk count. A chunk that suspends holds its helper's stack while it
///   waits; the others take over what that helper had left.
/// - Splitting: the range starts in one even part per participant; each runs its part from the
///   front, `grain` indices at a time (0: about an eighth of a part), and one that runs out takes
///   the back half of the largest part left (a single index from a part of one).
/// - Callable from a task (it suspends while others finish), a converted thread or the host
///   (it waits, pumping what its thread hosts). On a scheduler without workers the caller runs
///   every chunk.
/// - `body` is called from several threads at once. The first exception a chunk throws is
///   rethrown here once every chunk has ended; the chunks not begun by then are skipped.
/// - Throws what starting the helpers throws (std::logic_error once `scheduler` stops), before
///   any chunk ran.
template <class F>
void ParallelFor(Scheduler& scheduler, IndexRange range, std::size_t grain, F&& body,
                 const TaskOptions& helperOptions = {})
{
    using Body = std::remove_reference_t<F>;
    static_assert(std::is_invocable_v<Body&, IndexRange>, "the body takes an IndexRange chunk");
    detail::RunParallelFor(
        scheduler, range, grain, [](void* b, IndexRange chunk) { (*static_cast<Body*>(b))(chunk); },
        const_cast<void*>(static_cast<const void*>(std::addressof(body))), helperOptions);
}
} // namespace TC
