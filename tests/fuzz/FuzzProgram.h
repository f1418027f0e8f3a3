#pragma once
// RunFuzzProgram: reads bytes as a program of operations over the synchronization primitives,
// runs it across host-pumped tasks, worker tasks, converted threads and coroutines, and checks
// the invariants afterwards. A broken invariant prints a report and aborts the process.

#include <cstddef>
#include <cstdint>

namespace TCFuzz
{
// What one run did, for the replay's summary.
struct RunStats
{
    std::uint64_t operations = 0;
    std::uint64_t waits = 0;    // blocking or timed waits that returned
    std::uint64_t timeouts = 0; // of which timed out
};

RunStats RunFuzzProgram(const std::uint8_t* data, std::size_t size);
} // namespace TCFuzz
