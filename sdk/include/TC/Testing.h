#pragma once
// <TC/Testing.h> (link TC::sdk): seeded test runs of a primitive from tasks, threads and
// coroutines; reports lost wake-ups, double resumes and failed checks with their seed.
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
