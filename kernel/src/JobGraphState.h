#pragma once
// JobGraph's graph as built (jobs, edges) and as compiled for its runs: each job's successor
// edges, the counters its prerequisites count down, the roots and the sinks.

#include <TC/JobGraph.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace TC::detail
{
struct GraphRound;

// An edge or counter with no counter after it.
constexpr std::uint32_t kNoCounter = 0xffff'ffffu;
// A job with more prerequisites than this counts them in groups of kGroupSize (by the order
// their edges were added), each group's count on its own cache line and the job's counting its
// groups: participants that run neighbouring prerequisites (a frame's loops add edges in the
// order its jobs run) then share a line only at a group's end, not at every decrement.
constexpr std::uint32_t kGroupAbove = 32;
constexpr std::uint32_t kGroupSize = 16;

// A count down of one run, back to `initial` once it reached zero (by the decrement that did, so
// each run finds its counters ready); at zero it counts down `parent`, or readies its job.
struct GraphCounter
{
    std::atomic<std::uint32_t> left{0};
    std::uint32_t initial = 0;
    std::uint32_t parent = kNoCounter;
};
struct alignas(64) GraphCounterLine
{
    GraphCounter counters[4];
};

// An edge as a run reads it: the job after, and the counter it counts down (none when it is the
// job's only prerequisite).
struct GraphEdge
{
    std::uint32_t job;
    std::uint32_t counter;
};

// A job as a run reads it.
struct GraphJob
{
    void (*invoke)(void* callable);
    void* callable;
    std::uint32_t firstSuccessor; // into GraphState::successors
    std::uint32_t successorCount;
};

// The graph as built (jobs, edges) and as compiled for runs (successor lists, counters, roots).
struct GraphState
{
    struct Job
    {
        const TaskBody* body;
        void* callable;
        const char* name;
    };
    std::vector<Job> jobs;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::atomic<bool> running{false};
    bool compiled = false;
    std::vector<GraphJob> compiledJobs;
    std::vector<GraphEdge> successors;
    std::vector<std::uint32_t> roots;
    std::uint32_t sinks = 0;
    std::unique_ptr<GraphCounterLine[]> counterLines; // one per job with prerequisites, and groups
    GraphRound* round = nullptr; // the last run's, kept for the next one while no helper holds it

    void Compile();
    [[noreturn]] void ReportCycle(const std::vector<std::uint32_t>& left) const;
};

} // namespace TC::detail
