#pragma once
// ParallelFor: runs a body over an index range on a scheduler's workers and the caller.
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

// Calls body(chunk) for chunks covering `range` once each; returns when all have run.
/// - Run by the caller and one helper task per worker (one fewer when the caller is a task of
///   `scheduler`), bulk-started with `helperOptions`; one stack per helper, chunks run on it. A
///   suspended chunk holds its helper's stack; the others take over that helper's rest.
/// - One even part per participant, run `grain` indices at a time (0: about an eighth of a
///   part); an idle one takes the back half of the largest part left.
/// - From a task, a thread or the host (it waits, pumping). Without workers the caller runs
///   every chunk.
/// - `body` runs on several threads at once. The first exception a chunk throws is rethrown
///   once every chunk ended; chunks not begun by then are skipped.
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
