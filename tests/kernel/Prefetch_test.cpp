// PrefetchForWrite: a hint that never faults, whatever the address, and on x86 the processor's
// PREFETCHW support read from the CPUID bit Linux reports as "3dnowprefetch".

#include <TC/detail/Prefetch.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#if TC_PREFETCHW_DETECTED_AT_RUN_TIME
namespace
{
// The flags of the first processor in /proc/cpuinfo, with a space at both ends; empty if none.
std::string CpuFlags()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("flags", 0) == 0)
        {
            // Appended, not " " + ...: GCC 12 at -O3 warns (-Wrestrict) on that insert.
            std::string flags(1, ' ');
            flags.append(line, line.find(':') + 1);
            flags.push_back(' ');
            return flags;
        }
    return {};
}
} // namespace
#endif

TEST_CASE("PrefetchForWrite never faults: null, unmapped and ordinary addresses", "[prefetch]")
{
    TC::detail::PrefetchForWrite(nullptr);
    const long page = sysconf(_SC_PAGESIZE);
    void* reserved = mmap(nullptr, static_cast<std::size_t>(page), PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(reserved != MAP_FAILED);
    TC::detail::PrefetchForWrite(reserved); // mapped with no access at all
    munmap(reserved, static_cast<std::size_t>(page));
    TC::detail::PrefetchForWrite(reserved); // not mapped any more
    int value = 41;
    TC::detail::PrefetchForWrite(&value);
    value += 1;
    CHECK(value == 42);
}

#if TC_PREFETCHW_DETECTED_AT_RUN_TIME
TEST_CASE("PREFETCHW is used exactly where the processor reports it", "[prefetch]")
{
    const std::string flags = CpuFlags();
    REQUIRE_FALSE(flags.empty()); // Linux on x86 always lists them
    const bool reported = flags.find(" 3dnowprefetch ") != std::string::npos;
    CHECK(TC::detail::processorHasPrefetchW == reported);
    CHECK(TC::detail::ProcessorHasPrefetchW() == reported);
}
#endif
