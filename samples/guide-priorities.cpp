// guide-priorities: the embedding guide's priority levels, pinning and limited waits. A frame on
// a host-pumped scheduler: the submit task pinned to worker 0 of the workers, streaming at Low,
// and the main thread's join of the frame limited to High work, so telemetry (Normal) and
// prefetch (Low) wait for the end-of-frame pump. Prints what ran and exits non-zero if the
// order is not the documented one.

#include <TC/Core.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

int main()
{
    std::string order;             // the host's work, in the order it ran (main thread only)
    std::atomic<bool> onWorker0{false};
    std::thread::id worker0;
    TC::SchedulerOptions options;
    options.workerCount = 2;
    options.hooks.threadStart = [&](unsigned index) {
        if (index == 0)
            worker0 = std::this_thread::get_id();
    };
    TC::Scheduler workers(options);
    TC::Scheduler host; // pumped by this thread
    // [guide:priorities]
    // The draw-call submission must run on the thread that owns the device context: worker 0.
    TC::JoinHandle submit = workers.Start(
        [&] { onWorker0 = std::this_thread::get_id() == worker0; },
        {.name = "submit", .priority = TC::Priority::Critical, .worker = 0});
    // Streaming runs only while nothing above Low is ready.
    host.Start([&] { order += "prefetch "; }, {.name = "prefetch", .priority = TC::Priority::Low})
        .Detach();
    host.Start([&] { order += "telemetry "; }, {.name = "telemetry"}).Detach(); // Normal
    TC::JoinHandle frame = host.Start([&] { order += "frame "; },
                                      {.name = "frame", .priority = TC::Priority::High});
    {
        // This thread's wait runs only Critical and High work of the schedulers it hosts.
        TC::WaitLimit limit(TC::Priority::High);
        frame.Join();
    }
    order += "| ";
    host.RunUntilIdle(); // the end of the frame: Normal, then Low
    submit.Join();
    // [/guide:priorities]
    std::printf("host ran: %s\nsubmit on worker 0: %s\n", order.c_str(), onWorker0 ? "yes" : "no");
    const bool ok = order == "frame | telemetry prefetch " && onWorker0;
    if (!ok)
        std::printf("FAILED: expected \"frame | telemetry prefetch \" and the submit on worker 0\n");
    return ok ? 0 : 1;
}
