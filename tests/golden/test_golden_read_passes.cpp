// How many times the tools pass over a golden file's bytes before their workers read it: a
// model-sized file is GBs, and each pass costs seconds. run --write-results and check read each
// file in a child first (crash isolation, tests/cli/test_check_isolation.cpp) and then in their
// own process; the child reads what HDF5 reads, not the SHA-256 of the file (plain bytes, which
// cannot crash the library), so each file is hashed once. An LD_PRELOAD shim
// (count_hashed_bytes.c) logs every byte hashed, children included. Another
// (count_dataset_reads.c) logs every dataset read, in order: check reads a golden file's data in
// its child and in the run, not a third time in between, and each result when its case is
// compared, not all of them before the run.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using moe::test::bundled_case;
using moe::test::moe_conform;
using moe::test::run_command;

namespace {

const fs::path kFile = bundled_case("topk_one.h5");

std::uintmax_t hashed_bytes(const fs::path& log) {
    std::ifstream in(log);
    std::uintmax_t total = 0, n = 0;
    while (in >> n) total += n;
    return total;
}

// `args` run with the shim logging to `log` (emptied first).
moe::test::CommandResult run_logged(const fs::path& log, const std::string& args) {
    fs::remove(log);
    return run_command("MOE_HASH_LOG=" + log.string() + " LD_PRELOAD=" + std::string(MOE_HASH_SHIM) + " " +
                       moe_conform() + " " + args);
}

}  // namespace

TEST_CASE("run --write-results hashes each golden file once") {
    moe::test::TempDir dir;
    const fs::path log = dir.path() / "hashed.log";
    const auto r = run_logged(log, "run --quiet --no-manifest --backend loop_f32 --case " + kFile.string() +
                                       " --write-results " + (dir.path() / "res").string());
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::exists(dir.path() / "res" / "topk_one.h5"));
    // Exactly once (not zero times: the shim logs every hash); before, twice: in the child and here.
    CHECK(hashed_bytes(log) == fs::file_size(kFile));
}

TEST_CASE("check hashes each golden file once") {
    moe::test::TempDir dir;
    const fs::path res = dir.path() / "res";
    REQUIRE(run_command(moe_conform() + " run --quiet --no-manifest --backend loop_f32 --case " + kFile.string() +
                        " --write-results " + res.string()).exit_code == 0);
    const fs::path log = dir.path() / "hashed.log";
    const auto r = run_logged(log, "check --quiet --no-manifest --case " + kFile.string() + " --results " +
                                       (res / "topk_one.h5").string());
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(hashed_bytes(log) == fs::file_size(kFile));  // before: twice, in the child and here
}

TEST_CASE("check reads each golden file's data twice, and each result when its case is compared") {
    moe::test::TempDir dir;
    const fs::path res = dir.path() / "res";
    const std::vector<std::string> goldens = {kFile.string(),
                                              (kFile.parent_path() / "exact_f16_storage_gemm3_spec.h5").string()};
    const std::string cases = " --case " + goldens[0] + " --case " + goldens[1];
    REQUIRE(run_command(moe_conform() + " run --quiet --no-manifest --backend loop_f32" + cases + " --write-results " +
                        res.string()).exit_code == 0);
    const fs::path log = dir.path() / "reads.log";
    const auto r = run_command("MOE_READ_LOG=" + log.string() + " LD_PRELOAD=" + std::string(MOE_READ_SHIM) + " " +
                               moe_conform() + " check --quiet --no-manifest" + cases + " --results " + res.string());
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<std::pair<std::string, std::string>> reads;  // (file, dataset), in order
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
        const auto tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        reads.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    const auto last_read = [&](const std::string& file, const std::string& dataset) {
        std::ptrdiff_t last = -1;
        for (std::size_t i = 0; i < reads.size(); ++i)
            if (reads[i].first == file && reads[i].second == dataset) last = static_cast<std::ptrdiff_t>(i);
        return last;
    };
    for (const auto& golden : goldens) {
        CAPTURE(golden);
        const std::string result = (res / fs::path(golden).filename()).string();
        // In the child (crash isolation) and in the run; before, a third time between them.
        CHECK(std::count(reads.begin(), reads.end(), std::make_pair(golden, std::string("/inputs/hidden_states"))) == 2);
        CHECK(std::count(reads.begin(), reads.end(), std::make_pair(result, std::string("/outputs/output"))) == 2);
        // Read where its case is compared, after the golden file; before, every result was read
        // (and kept) ahead of the run.
        CHECK(last_read(result, "/outputs/output") > last_read(golden, "/inputs/hidden_states"));
    }
}
