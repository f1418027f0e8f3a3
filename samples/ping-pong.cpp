// ping-pong: two tasks alternate through single-waiter events, first on one worker, then across
// two workers; prints the round-trip time of each and checks that every ball came back.

#include <TC/Core.h>
#include <TC/Synchronization.h>

#include <chrono>
#include <cstdio>

namespace
{
using Clock = std::chrono::steady_clock;
using TC::Synchronization::AutoResetEvent_s;

// [guide:ping-pong]
// Two tasks hit a ball back and forth: each waits on its own event and sets the other's.
struct Table
{
    AutoResetEvent_s ping; // the pinger waits here
    AutoResetEvent_s pong; // the ponger waits here
    int hits = 0;          // touched only by the player holding the ball
};

void Pinger(Table& table, int rounds)
{
    for (int i = 0; i < rounds; ++i)
    {
        ++table.hits;
        table.pong.Set(); // hand the ball over ...
        table.ping.Wait(); // ... and wait for it to come back
    }
}

void Ponger(Table& table, int rounds)
{
    for (int i = 0; i < rounds; ++i)
    {
        table.pong.Wait();
        ++table.hits;
        table.ping.Set();
    }
}
// [/guide:ping-pong]

bool Play(const char* name, unsigned workers, int rounds)
{
    TC::Scheduler scheduler(workers);
    Table table;
    const auto start = Clock::now();
    // [guide:start-players]
    TC::JoinHandle ponger = scheduler.Start([&] { Ponger(table, rounds); }, {.name = "ponger"});
    TC::JoinHandle pinger = scheduler.Start([&] { Pinger(table, rounds); }, {.name = "pinger"});
    pinger.Join(); // the main thread waits as a converted thread
    ponger.Join();
    // [/guide:start-players]
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    const bool ok = table.hits == 2 * rounds;
    std::printf("%-14s %d round trips, %.0f ns per round trip: %s\n", name, rounds, ns / rounds,
                ok ? "ok" : "WRONG HIT COUNT");
    return ok;
}
} // namespace

int main()
{
    bool ok = Play("one worker:", 1, 1000000);
    ok = Play("two workers:", 2, 100000) && ok;
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
