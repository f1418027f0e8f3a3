// mailbox: a request/reply service with several clients. Requests go through a Channel (any
// number of senders), each client has its own Mailbox for replies, and clients give up on a
// reply after a timeout. Checks every answer and the expected timeouts.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

namespace
{
using namespace std::chrono_literals;
using TC::Synchronization::Channel;
using TC::Synchronization::Mailbox;

// [guide:service]
struct Request
{
    int value;
    Mailbox<int>* replyTo; // the asking client's own mailbox
};

// Answers requests until the channel is closed and drained. A negative request is "slow": the
// service takes 20 ms over it, longer than clients are willing to wait.
void Serve(Channel<Request>& requests)
{
    while (std::optional<Request> request = requests.Receive())
    {
        if (request->value < 0)
            TC::Synchronization::Mailbox<int>().Take(20ms); // nobody puts: just a 20 ms wait
        request->replyTo->Put(request->value * 2);
    }
}

// Asks and waits at most `patience` for the answer; an empty optional means it gave up.
std::optional<int> Ask(Channel<Request>& requests, Mailbox<int>& replies, int value,
                       TC::Duration patience)
{
    requests.Send(Request{value, &replies});
    return replies.Take(patience);
}
// [/guide:service]
} // namespace

int main()
{
    TC::EnableTimers(); // timed waits need the timer thread
    TC::Scheduler scheduler(2);
    Channel<Request> requests;
    TC::JoinHandle service = scheduler.Start([&] { Serve(requests); }, {.name = "service"});

    constexpr int clients = 4;
    constexpr int asks = 2000;
    std::atomic<long> sum{0};
    std::atomic<int> timeouts{0};
    std::vector<TC::JoinHandle> tasks;
    for (int c = 0; c < clients; ++c)
        tasks.push_back(scheduler.Start(
            [&, c] {
                Mailbox<int> replies;
                for (int i = 1; i <= asks; ++i)
                    if (std::optional<int> answer = Ask(requests, replies, i, 5s))
                        sum += *answer;
                // One slow request per client: it must time out after 5 ms ...
                if (!Ask(requests, replies, -c - 1, 5ms))
                    ++timeouts;
                // ... and its late answer must be collected before the mailbox goes away.
                if (replies.Take(5s) != -2 * (c + 1))
                    timeouts += 1000;
            },
            {.name = "client"}));
    for (auto& task : tasks)
        task.Join();
    requests.Close();
    service.Join();

    const long expected = clients * static_cast<long>(asks) * (asks + 1); // 2 * sum(1..asks) each
    std::printf("answers:  sum %ld (expected %ld)\n", sum.load(), expected);
    std::printf("timeouts: %d of %d slow requests timed out\n", timeouts.load(), clients);
    const bool ok = sum == expected && timeouts == clients;
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
