#pragma once
// The subcommands of moe-golden. Each returns the process exit code:
//   0 success, 1 verification found a difference, 2 bad input (usage, file, catalogue, problem).
#include <cstdint>
#include <string>
#include <vector>

namespace moe::golden_cli {

struct GenerateOptions {
    std::string catalog, out_dir, tier = "ci";
    std::vector<std::string> filters;
    bool stages = false, manifest = false;
    int threads = 1;
    std::uint64_t max_memory = 0;  // bytes generating one case may need; 0 = golden::default_max_memory()
};
int generate(const GenerateOptions& o);

struct VerifyOptions {
    std::string catalog, dir, tier = "ci";  // catalog: main() fills in the bundled one when none is given
    std::vector<std::string> filters;       // case-name globs; empty = every case at the tier
    int threads = 1;
    std::uint64_t max_memory = 0;  // for reading each file and for regenerating its case; 0 = the default
};
int verify(const VerifyOptions& o);

struct CompleteOptions {
    std::string input, output;
    bool stages = false;
    int threads = 1;
    std::uint64_t max_memory = 0;
};
int complete(const CompleteOptions& o);

struct InspectOptions {
    std::string file;
    std::uint64_t max_memory = 0;
    int threads = 1;
};
int inspect(const InspectOptions& o);

}  // namespace moe::golden_cli
