// libFuzzer entry point (clang only): one program per input; a broken invariant aborts.

#include "FuzzProgram.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    (void)TCFuzz::RunFuzzProgram(data, size);
    return 0;
}
