// How many times the tools pass over a golden file's bytes before their workers read it: a
// model-sized file is GBs, and each pass costs seconds. run --write-results and check read each
// file in a child first (crash isolation, tests/cli/test_check_isolation.cpp) and then in their
// own process; the child reads what HDF5 reads, not the SHA-256 of the file (plain bytes, which
// cannot crash the library), so each file is hashed once. An LD_PRELOAD shim
// (count_hashed_bytes.c) logs every byte hashed, children included.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using moe::test::moe_conform;
using moe::test::run_command;

namespace {

const fs::path kFile = fs::path(MOE_SOURCE_DIR) / "data/golden/topk_one.h5";

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
