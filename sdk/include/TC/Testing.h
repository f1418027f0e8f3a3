#pragma once
// <TC/Testing.h>: test kit for primitives on the suspend protocol: seeded runs from tasks,
// threads and coroutines; reports lost wake-ups, double resumes and failed checks with a seed
// (link TC::sdk).
//   auto summary = TC::Testing::Stress({}, [](TC::Testing::Context& ctx) {
//       auto& box = ctx.Make<Mailbox>();
//       ctx.Spawn("taker", [&] { ctx.Check(box.Take() == 1, "the value"); });
//       ctx.Spawn("putter", [&] { box.Put(1); });
//   });
//   REQUIRE(summary.Passed()); // summary.failingSeeds replay each failure

#include <TC/Testing/Context.h>
#include <TC/Testing/Harness.h>
#include <TC/Testing/Result.h>
#include <TC/Testing/StressOptions.h>
