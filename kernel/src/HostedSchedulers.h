#pragma once
// HostedSchedulers: the schedulers a thread hosts, held and pumped while that thread waits.

#include "Parker.h"
#include "ThreadState.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace TC::detail
{
class SchedulerCore;

// The schedulers a thread hosts (but one it skips), held for a wait of that thread
// (HoldHostsForWait) and pumped a round at a time: a converted-thread wait and Stop's drains keep
// them running, so work pinned to the host cannot deadlock either (ThreadWaiter.cpp).
class HostedSchedulers
{
public:
    HostedSchedulers(ThreadState& thread, const SchedulerCore* skip) noexcept;
    ~HostedSchedulers();
    HostedSchedulers(const HostedSchedulers&) = delete;
    HostedSchedulers& operator=(const HostedSchedulers&) = delete;

    std::size_t Count() const noexcept { return count_; }
    // Pumps each once; true when any ran something. Work that throws out of the pump ends the
    // process ("work threw inside a wait"): the waiter's handle may be published.
    bool PumpRound();
    // Registers `word` as a sleeper with each, then looks at their queues: true when any has
    // work queued (the caller then does not sleep). A submission after the look wakes `word`.
    bool RegisterAndLook(std::atomic<std::uint32_t>& word);
    void Unregister() noexcept;

private:
    ThreadState& thread_;
    SchedulerCore* cores_[ThreadState::kMaxHosts];
    Parker parkers_[ThreadState::kMaxHosts];
    std::size_t count_ = 0;
};
} // namespace TC::detail
