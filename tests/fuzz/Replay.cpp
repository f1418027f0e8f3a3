// tc_fuzz_replay: the fuzz target as a plain program, for builds without libFuzzer. Runs every
// file of a corpus directory, then random programs from a fixed seed until a time budget is
// spent. Usage: tc_fuzz_replay [--seconds N] [--seed S] [--dump FILE] [corpus-dir-or-file ...]
// (--dump writes each random program to FILE before running it: after a crash, FILE replays it).

#include "FuzzProgram.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace
{
std::vector<std::uint8_t> ReadFile(const std::filesystem::path& path)
{
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}
} // namespace

int main(int argc, char** argv)
{
    double seconds = 10;
    std::uint64_t seed = 1;
    std::vector<std::filesystem::path> inputs;
    const char* dump = nullptr; // --dump FILE: each random program is written there before it runs
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
            dump = argv[++i];
        else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else
            inputs.emplace_back(argv[i]);
    }
    TCFuzz::RunStats total;
    auto add = [&](const TCFuzz::RunStats& stats)
    {
        total.operations += stats.operations;
        total.waits += stats.waits;
        total.timeouts += stats.timeouts;
    };
    std::size_t corpusRuns = 0;
    for (const auto& input : inputs)
    {
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(input))
        {
            for (const auto& entry : std::filesystem::directory_iterator(input))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
        }
        else
            files.push_back(input);
        for (const auto& file : files)
        {
            const std::vector<std::uint8_t> bytes = ReadFile(file);
            add(TCFuzz::RunFuzzProgram(bytes.data(), bytes.size()));
            ++corpusRuns;
        }
    }
    if (corpusRuns == 0 && !inputs.empty())
    {
        std::fprintf(stderr, "tc_fuzz_replay: no corpus file found\n");
        return 2;
    }
    std::mt19937_64 random(seed);
    std::size_t randomRuns = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end)
    {
        std::vector<std::uint8_t> bytes(8 + random() % 120);
        for (auto& byte : bytes)
            byte = static_cast<std::uint8_t>(random());
        if (dump)
            std::ofstream(dump, std::ios::binary)
                .write(reinterpret_cast<const char*>(bytes.data()),
                       static_cast<std::streamsize>(bytes.size()));
        add(TCFuzz::RunFuzzProgram(bytes.data(), bytes.size()));
        ++randomRuns;
    }
    std::printf("tc_fuzz_replay: %zu corpus programs, %zu random programs (seed %llu); "
                "%llu operations, %llu waits (%llu timed out); 0 anomalies\n",
                corpusRuns, randomRuns, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(total.operations),
                static_cast<unsigned long long>(total.waits),
                static_cast<unsigned long long>(total.timeouts));
    return 0;
}
