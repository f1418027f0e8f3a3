#pragma once
// <TC/Testing.h>: the test kit for primitives written on the suspend protocol: it drives one from
// tasks, threads and coroutines, perturbs race points from a seed, and reports lost wake-ups,
// double resumes, waits inside callbacks and failed checks with the seed that replays them.
//   auto summary = TC::Testing::Stress({}, [](TC::Testing::Context& ctx) { // 100 seeded runs
//       auto& box = ctx.Make<Mailbox>();          // shared by the participants
//       ctx.Spawn("taker", [&] { ctx.Check(box.Take() == 1, "the value"); });
//       ctx.Spawn("putter", [&] { box.Put(1); }); // a task or a thread, as the seed decides
//   });
//   REQUIRE(summary.Passed());                   // else summary.failingSeeds replay each failure
// Spawn with a coroutine form too lets the seed run a participant as a coroutine. Deterministic
// mode (default) replays a seed exactly; Stress adds threads and random delays. Link TC::sdk.

#include <TC/Testing/Context.h>
#include <TC/Testing/Harness.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
