// Checked mode and WaitQueue: each rule a WaitQueue-based primitive can break is broken once, in
// a child process, and fails at once with a message naming it. Linked against the checked build
// of the layer, so it proves the checks in every configuration.

#include "DeathTest.h"

#include <catch2/catch.hpp>

#include <TC/Core.h>
#include <TC/Synchronization/WaitQueue.h>

#include <optional>

using namespace TC;
using namespace TC::Synchronization;
using TestSupport::RequireRule;
using TestSupport::RunInChild;

TEST_CASE("A WaitQueue destroyed with a waiter queued fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0); // host-pumped: RunPending runs the task up to its wait
            std::optional<WaitQueue> queue(std::in_place);
            auto waiter = scheduler.Start([&] { queue->Wait([]() noexcept { return true; }); });
            scheduler.RunPending();
            queue.reset();
        });
    RequireRule(result, "destroy a primitive only when nobody waits on it");
}

TEST_CASE("A wait inside a WaitQueue's re-check fails at once")
{
    auto result = RunInChild(
        []
        {
            Scheduler scheduler(0);
            WaitQueue queue, other;
            auto waiter = scheduler.Start(
                [&]
                {
                    // The re-check runs inside OnSuspended, where nothing may wait.
                    queue.Wait(
                        [&]() noexcept
                        {
                            other.Wait([]() noexcept { return true; });
                            return true;
                        });
                });
            scheduler.RunPending();
        });
    RequireRule(result, "wait inside a callback");
}
