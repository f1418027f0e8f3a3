// JobGraph's building: jobs and edges as added, compiled at the first Run after a change into
// successor edges and counters, with Kahn's order proving the graph acyclic.

#include "JobGraphState.h"

#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace TC::detail
{
namespace
{
std::string JobLabel(const char* name, std::uint32_t index)
{
    return name ? "job '" + std::string(name) + "'" : "job #" + std::to_string(index);
}
} // namespace

void GraphState::Compile()
{
    const auto count = static_cast<std::uint32_t>(jobs.size());
    compiledJobs.assign(count, GraphJob{});
    std::vector<std::uint32_t> prerequisites(count, 0);
    std::vector<std::uint32_t> offsets(std::size_t{count} + 1, 0);
    for (const auto& [before, after] : edges)
    {
        ++offsets[before + 1];
        ++prerequisites[after];
    }
    for (std::uint32_t i = 0; i < count; ++i)
        offsets[i + 1] += offsets[i];
    // Counters: a job's, packed four to a line; each group's on a line of its own.
    std::vector<std::uint32_t> counterOf(count, kNoCounter);
    std::vector<std::uint32_t> firstGroup(count, kNoCounter);
    std::uint32_t slots = 0;
    for (std::uint32_t i = 0; i < count; ++i)
        if (prerequisites[i] > 1)
            counterOf[i] = slots++;
    for (std::uint32_t i = 0; i < count; ++i)
        if (prerequisites[i] > kGroupAbove)
        {
            slots = (slots + 3) / 4 * 4;
            firstGroup[i] = slots;
            slots += (prerequisites[i] + kGroupSize - 1) / kGroupSize * 4;
        }
    counterLines.reset(new GraphCounterLine[(slots + 3) / 4]);
    auto counterAt = [this](std::uint32_t slot) -> GraphCounter&
    { return counterLines[slot / 4].counters[slot % 4]; };
    std::vector<std::uint32_t> seen(count, 0); // edges into each job so far
    successors.assign(edges.size(), GraphEdge{});
    std::vector<std::uint32_t> filled(offsets.begin(), offsets.end() - 1);
    for (const auto& [before, after] : edges)
    {
        std::uint32_t counter = counterOf[after];
        if (firstGroup[after] != kNoCounter)
        {
            counter = firstGroup[after] + seen[after] / kGroupSize * 4;
            ++counterAt(counter).initial;
            counterAt(counter).parent = counterOf[after];
            if (seen[after] % kGroupSize == 0)
                ++counterAt(counterOf[after]).initial;
        }
        else if (counter != kNoCounter)
            ++counterAt(counter).initial;
        ++seen[after];
        successors[filled[before]++] = GraphEdge{after, counter};
    }
    for (std::uint32_t slot = 0; slot < slots; ++slot)
        counterAt(slot).left.store(counterAt(slot).initial, std::memory_order_relaxed);
    roots.clear();
    sinks = 0;
    for (std::uint32_t i = 0; i < count; ++i)
    {
        GraphJob& job = compiledJobs[i];
        job.invoke = jobs[i].body->invoke;
        job.callable = jobs[i].callable;
        job.firstSuccessor = offsets[i];
        job.successorCount = offsets[i + 1] - offsets[i];
        if (prerequisites[i] == 0)
            roots.push_back(i);
        if (job.successorCount == 0)
            ++sinks;
    }
    // Kahn's order: every job is reached from a root only if no cycle holds any back.
    std::vector<std::uint32_t> order(roots);
    for (std::size_t i = 0; i < order.size(); ++i)
    {
        const GraphJob& job = compiledJobs[order[i]];
        for (std::uint32_t e = job.firstSuccessor; e < job.firstSuccessor + job.successorCount; ++e)
            if (--prerequisites[successors[e].job] == 0)
                order.push_back(successors[e].job);
    }
    if (order.size() != count)
        ReportCycle(prerequisites);
    compiled = true;
}

// `left`: prerequisites not run in Kahn's order, nonzero on every job a cycle holds back. Each
// such job has a prerequisite so held back too, so walking back from one as many steps as there
// are jobs ends on a cycle.
void GraphState::ReportCycle(const std::vector<std::uint32_t>& left) const
{
    std::uint32_t job = 0;
    while (left[job] == 0)
        ++job;
    for (std::size_t step = 0; step < jobs.size(); ++step)
        for (const auto& [before, after] : edges)
            if (after == job && left[before] != 0)
            {
                job = before;
                break;
            }
    throw std::logic_error("JobGraph::Run: the graph has a cycle through " +
                           JobLabel(jobs[job].name, job));
}
} // namespace TC::detail

namespace TC
{
JobGraph::Node JobGraph::AddJob(const detail::TaskBody& body, const char* name, void*& slot)
{
    if (state_->running.load(std::memory_order_relaxed))
        throw std::logic_error("JobGraph::Add: the graph is running");
    if (state_->jobs.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
        throw std::length_error("JobGraph::Add: too many jobs");
    state_->jobs.push_back({&body, nullptr, name});
    try
    {
        slot = ::operator new (body.size, std::align_val_t{body.alignment});
    }
    catch (...)
    {
        state_->jobs.pop_back();
        throw;
    }
    state_->jobs.back().callable = slot;
    state_->compiled = false;
    return Node(state_.get(), static_cast<std::uint32_t>(state_->jobs.size() - 1));
}

void JobGraph::DropLastJob() noexcept
{
    const auto& job = state_->jobs.back();
    ::operator delete (job.callable, std::align_val_t{job.body->alignment});
    state_->jobs.pop_back();
}

void JobGraph::Precede(Node before, Node after)
{
    if (before.graph_ != state_.get() || after.graph_ != state_.get())
        throw std::logic_error("JobGraph::Precede: a node of another graph");
    if (before.index_ == after.index_)
        throw std::logic_error("JobGraph::Precede: a job cannot precede itself");
    if (state_->running.load(std::memory_order_relaxed))
        throw std::logic_error("JobGraph::Precede: the graph is running");
    state_->edges.emplace_back(before.index_, after.index_);
    state_->compiled = false;
}

std::size_t JobGraph::Size() const noexcept
{
    return state_->jobs.size();
}

} // namespace TC
