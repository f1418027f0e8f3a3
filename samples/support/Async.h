#pragma once
// Async: run a callable as a task and get a Future of its result.

#include <TC/Scheduler.h>
#include <TC/Synchronization/Future.h>

#include <exception>
#include <type_traits>
#include <utility>

// [guide:async]
// Runs `work` as a task on `scheduler` and returns a Future of its result. Start only queues the
// task: it never blocks and never runs the work inline, from the host or anywhere else.
template <class F>
auto Async(TC::Scheduler& scheduler, F work, TC::TaskOptions options)
{
    using R = std::invoke_result_t<F&>;
    TC::Synchronization::Promise<R> promise;
    TC::Synchronization::Future<R> future = promise.GetFuture();
    scheduler
        .Start(
            [work = std::move(work), promise = std::move(promise)]() mutable
            {
                try
                {
                    promise.SetValue(work());
                }
                catch (...)
                {
                    promise.SetException(std::current_exception());
                }
            },
            options)
        .Detach();
    return future;
}
// [/guide:async]
