// frame-graph: a frame's dependent jobs as a JobGraph, built once and run every frame from a
// task on the main thread's scheduler, which the main thread pumps; the jobs run on two workers
// and on the frame task's stack, no task per job. It checks that every job ran once a frame and
// after the jobs before it, and exits non-zero if anything is off.

#include <TC/Core.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace
{
constexpr int kFrames = 200;
constexpr std::size_t kAgents = 256;

struct Frame
{
    std::vector<long> poses = std::vector<long>(kAgents, 0);
    std::vector<long> skins = std::vector<long>(kAgents, 0);
    long visible = 0;
    TC::JobGraph jobs;
};

// [guide:job-graph]
// Built once: each agent's pose, then its skin after it, then one culling job after every skin.
// A job begins once the jobs before it ended and sees what they wrote; a run takes no task and
// no stack per job.
void BuildFrameJobs(Frame& frame)
{
    std::vector<TC::JobGraph::Node> skins;
    for (std::size_t agent = 0; agent < kAgents; ++agent)
    {
        TC::JobGraph::Node pose = frame.jobs.Add([&frame, agent] { ++frame.poses[agent]; }, "pose");
        TC::JobGraph::Node skin = frame.jobs.Add(
            [&frame, agent] { frame.skins[agent] = frame.poses[agent] * 2; }, "skin");
        frame.jobs.Precede(pose, skin);
        skins.push_back(skin);
    }
    TC::JobGraph::Node cull = frame.jobs.Add(
        [&frame] { frame.visible = std::accumulate(frame.skins.begin(), frame.skins.end(), 0L); },
        "cull");
    for (TC::JobGraph::Node skin : skins)
        frame.jobs.Precede(skin, cull);
}

// Each frame, from the frame task: the caller and a helper task per worker run the jobs; the
// frame task suspends once it has none left to run (the host goes on pumping).
void RunFrameJobs(Frame& frame, TC::Scheduler& workers)
{
    frame.jobs.Run(workers, {.name = "frame-jobs", .priority = TC::Priority::High});
}
// [/guide:job-graph]
} // namespace

int main()
{
    TC::Scheduler host(0u); // pumped by this thread
    TC::Scheduler workers(2u);
    Frame frame;
    BuildFrameJobs(frame);
    int wrong = 0;
    for (int i = 1; i <= kFrames; ++i)
    {
        bool done = false;
        host.Start(
                [&]
                {
                    RunFrameJobs(frame, workers);
                    done = true;
                },
                {.name = "frame", .priority = TC::Priority::High})
            .Detach();
        while (!done)
            if (host.RunFor(std::chrono::microseconds(500)).ran == 0)
                host.WaitForWork(std::chrono::microseconds(500));
        if (frame.visible != 2L * i * static_cast<long>(kAgents))
            ++wrong;
    }
    std::printf("frame-graph: %d frames of %zu jobs\n", kFrames, frame.jobs.Size());
    if (wrong != 0)
    {
        std::printf("frame-graph: %d frame(s) culled before every skin was done: FAILED\n", wrong);
        return EXIT_FAILURE;
    }
    std::printf("frame-graph: every job ran once a frame, after the jobs before it\n");
    return EXIT_SUCCESS;
}
