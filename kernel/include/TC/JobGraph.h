#pragma once
// JobGraph: jobs run once those before them ended; built once, run many times.
//     frame.Precede(frame.Add(Physics), frame.Add(Render));  frame.Run(scheduler);

#include <TC/Scheduler.h>
#include <TC/detail/Export.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace TC
{
namespace detail
{
struct GraphState;
}

/// - A job's writes happen-before the jobs after it begin; Add, Precede in a Run throw.
class TC_API JobGraph
{
public:
    class Node
    {
    public:
        Node() noexcept = default;
        bool operator==(const Node&) const noexcept = default;

    private:
        friend class JobGraph;
        Node(detail::GraphState* graph, std::uint32_t index) noexcept : graph_(graph), index_(index)
        {
        }
        detail::GraphState* graph_ = nullptr;
        std::uint32_t index_ = 0;
    };

    JobGraph();
    ~JobGraph();
    JobGraph(const JobGraph&) = delete;
    JobGraph& operator=(const JobGraph&) = delete;

    // name: stable, for errors.
    template <class F>
    Node Add(F&& body, const char* name = nullptr)
    {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "a job is a callable taking no arguments");
        void* slot = nullptr;
        const Node node = AddJob(detail::TaskBodyFor<Fn>::body, name, slot);
        try
        {
            ::new (slot) Fn(std::forward<F>(body));
        }
        catch (...)
        {
            DropLastJob();
            throw;
        }
        return node;
    }

    // Another graph's node or before == after: std::logic_error.
    void Precede(Node before, Node after);

    std::size_t Size() const noexcept;

    // Runs each job once; waits (pumping) as ParallelFor:
    /// - on the caller's stack and a helper task's per worker; a waiting job holds one;
    /// - first exception rethrown once all ended, jobs not begun skipped;
    /// - cycle or Run in progress: logic_error before any job; what Start throws.
    void Run(Scheduler& scheduler, const TaskOptions& helperOptions = {});

private:
    Node AddJob(const detail::TaskBody& body, const char* name, void*& slot);
    void DropLastJob() noexcept;

    std::unique_ptr<detail::GraphState> state_;
};
} // namespace TC
