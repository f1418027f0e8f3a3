#pragma once
// The ping-pong workload shared by the kernel's rows (through the guide's Mailbox) and the sync
// layer's (through Mailbox<int>): a client puts a request and takes the reply, a server answers.

#include "peers/Measure.h"

#include <TC/Core.h>

#include <benchmark/benchmark.h>

namespace TCBench
{
// Answers every positive request with the same value until it takes a non-positive one.
template <class Box>
void Serve(Box& requests, Box& replies)
{
    for (int request; (request = requests.Take()) > 0;)
        replies.Put(request);
}

// Takes one reply, untimed: RunPingPong's default way.
struct TakeReply
{
    template <class Box>
    bool operator()(Box& replies, int& reply) const
    {
        reply = replies.Take();
        return true;
    }
};

// Runs the client on `clientScheduler` and the server on `serverScheduler`, through two Boxes;
// the client's loop is the benchmark's, and an item is one round trip. `takeReply(replies,
// reply)` takes each reply and returns false if it timed out, which fails the row.
template <class Box, class Take = TakeReply>
void RunPingPong(benchmark::State& state, TC::Scheduler& clientScheduler,
                 TC::Scheduler& serverScheduler, Take takeReply = {})
{
    Box requests;
    Box replies;
    bool ok = true;
    TC::JoinHandle server = serverScheduler.Start([&] { Serve(requests, replies); });
    TC::JoinHandle client = clientScheduler.Start(
        [&]
        {
            for (auto _ : state)
            {
                requests.Put(1);
                int reply = 0;
                ok &= takeReply(replies, reply);
                benchmark::DoNotOptimize(reply);
            }
            requests.Put(-1);
        });
    client.Join();
    server.Join();
    if (Expect(state, ok, "a timed wait timed out"))
        ReportItems(state, 1);
}
} // namespace TCBench
