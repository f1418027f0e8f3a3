#pragma once
// <TC/Testing.h>: the test kit for people who write their own primitives on the suspend
// protocol. It drives a primitive from tasks, converted threads and coroutines, perturbs the
// protocol's race points from a seed, and reports lost wake-ups, double resumes, waits inside
// callbacks and failed checks with the seed that replays them.
//
//   TC::Testing::StressOptions options;          // 100 deterministic runs, seeds 1..100
//   auto summary = TC::Testing::Stress(options, [](TC::Testing::Context& ctx) {
//       auto& requests = ctx.Make<Mailbox>();     // owned by the run, shared by participants
//       auto& replies = ctx.Make<Mailbox>();
//       ctx.Spawn("service", [&] { Serve(requests, replies); });
//       ctx.Spawn("client", [&] {                 // a task or a thread, as the seed decides
//           for (int i = 1; i <= 10; ++i)
//               ctx.Check(Ask(requests, replies, i) == 2 * i, "the reply");
//           requests.Put(-1);
//       });
//   });
//   REQUIRE(summary.Passed());                   // else summary.failingSeeds replay each failure
//
// Context::Spawn with a second, coroutine form of the body lets the seed run a participant as
// a coroutine too. Mode::Deterministic (the default) replays a failing seed exactly;
// Mode::Stress adds real threads and random delays at every race point.
//
// Link TC::sdk. Everything is in namespace TC::Testing.

#include <TC/Testing/Context.h>
#include <TC/Testing/Harness.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
