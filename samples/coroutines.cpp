// Coroutines on a strand: a server coroutine answers requests that arrive in a Mailbox, awaiting
// each one with co_await; a client thread sends a request and blocks on the reply. Every wait
// of the server comes back on its strand, which the sample checks after each one. Prints what it
// did; exits non-zero when a check fails.

#include <TC/Core.h>
#include <TC/Strands.h>
#include <TC/Synchronization/Latch.h>
#include <TC/Synchronization/Mailbox.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace
{
using TC::Synchronization::Latch;
using TC::Synchronization::Mailbox;

struct Request
{
    int value = 0;            // 0 asks the server to stop
    Mailbox<int>* reply = nullptr;
};

std::atomic<int> failures{0};

void Check(bool ok, const char* what)
{
    if (!ok)
    {
        std::printf("FAILED: %s\n", what);
        failures.fetch_add(1);
    }
}

// Owned by nobody: it runs for its effects and counts the latch down when it ends. Its
// parameters are values (pointers to objects that outlive it), never references.
TC::Strands::DetachedTask Server(TC::Strands::Strand* strand, Mailbox<Request>* requests, Latch* finished,
                        int* served)
{
    co_await TC::Strands::ResumeOn{*strand};
    Check(strand->RunningHere(), "the server starts on its strand");
    for (;;)
    {
        Request request = co_await requests->TakeAsync();
        // Put from the client thread resumed us through the strand, not on the client thread.
        Check(strand->RunningHere(), "the server is back on its strand after each take");
        if (request.value == 0)
            break;
        ++*served; // strand-only state: no lock
        request.reply->Put(request.value * 2);
    }
    std::printf("server: answered %d requests on its strand\n", *served);
    finished->CountDown();
}
} // namespace

int main()
{
    constexpr int rounds = 1000;
    TC::Scheduler scheduler(2u); // two workers: the strand runs on either, one task at a time
    TC::Strands::Strand strand(scheduler);
    Mailbox<Request> requests;
    Mailbox<int> replies;
    Latch finished(1);
    int served = 0;

    Server(&strand, &requests, &finished, &served);

    std::thread client([&] {
        long sum = 0;
        for (int i = 1; i <= rounds; ++i)
        {
            requests.Put(Request{i, &replies});
            sum += replies.Take(); // a converted thread: blocks until the server replies
        }
        requests.Put(Request{0, nullptr});
        std::printf("client: sent %d requests, replies summed to %ld\n", rounds, sum);
        Check(sum == static_cast<long>(rounds) * (rounds + 1), "every reply doubled its request");
    });
    client.join();
    finished.Wait();
    strand.WaitIdle();
    Check(served == rounds, "the server answered every request");

    if (failures.load() != 0)
    {
        std::printf("coroutines: %d check(s) failed\n", failures.load());
        return 1;
    }
    std::printf("coroutines: all checks passed\n");
    return 0;
}
