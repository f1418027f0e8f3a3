// hello: the README's program. A stackful task and a coroutine wait on one event; the coroutine
// then awaits two child coroutines and hands their sum back to main. Exits non-zero if the sum is
// wrong.

// [guide:hello]
#include <TC/TC.h>

#include <cstdio>

using namespace TC::Synchronization; // ManualResetEvent, Mailbox
using namespace TC::Strands;         // Task, DetachedTask

Task<int> Square(int n) { co_return n * n; } // lazy: runs when awaited

DetachedTask Sum(TC::Scheduler* workers, ManualResetEvent* go, Mailbox<int>* out)
{
    co_await workers->Schedule();                     // continue on a worker thread
    co_await *go;                                     // park, holding no thread, until go is set
    out->Put(co_await Square(3) + co_await Square(4)); // await coroutines; hand the sum over
}

int main()
{
    TC::Scheduler workers(2u); // two worker threads
    ManualResetEvent go;       // a gate: Set lets every waiter through
    Mailbox<int> result;       // one value for one taker
    int seen = 0;
    TC::JoinHandle task = workers.Start([&] { go.Wait(); seen = 1; }); // a task blocks in Wait
    Sum(&workers, &go, &result); // a coroutine: runs up to its first co_await
    go.Set();                    // wakes both
    task.Join();                 // main waits as a converted thread
    const int sum = result.Take();
    std::printf("task saw the event: %d, coroutines summed to %d\n", seen, sum);
    return seen == 1 && sum == 25 ? 0 : 1;
}
// [/guide:hello]
