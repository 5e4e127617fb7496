// moe-conform check (golden and result files) and run --write-results (each case's name and
// hash) read files before their workers run: a file that crashes HDF5 there must be named (exit
// 2), not take the tool down. A shim (crash_on_h5fopen.c) makes HDF5 crash on one file, as a
// damaged old-format file can.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::bundled_case;
namespace fs = std::filesystem;

namespace {
const std::string kShim = "LD_PRELOAD=" + std::string(MOE_CRASH_SHIM) + " ";
}  // namespace

TEST_CASE("check names a golden or result file that crashes HDF5 while it is read, and exits 2") {
    moe::test::TempDir dir;
    const fs::path res = dir.path() / "res";
    REQUIRE(run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("topk_one.h5") +
                        " --write-results " + res.string()).exit_code == 0);
    const fs::path golden = dir.path() / "crashes-hdf5.h5";
    fs::copy_file(bundled_case("topk_one.h5"), golden);
    // The shim is in force: the same files without the crashing name still pass.
    const auto fine = run_command(kShim + moe_conform() + " check --quiet --no-manifest --case " +
                                  bundled_case("topk_one.h5") + " --results " + (res / "topk_one.h5").string());
    CAPTURE(fine.output);
    CHECK(fine.exit_code == 0);
    const auto crashed = run_command(kShim + moe_conform() + " check --quiet --no-manifest --case " + golden.string() +
                                     " --results " + (res / "topk_one.h5").string());
    CAPTURE(crashed.output);
    CHECK(crashed.exit_code == 2);
    CHECK(crashed.output.find("golden file " + golden.string() + ": reading it crashed or hung the HDF5 library") !=
          std::string::npos);
    const fs::path result = dir.path() / "crashes-hdf5-result.h5";
    fs::copy_file(res / "topk_one.h5", result);
    const auto crashed_result = run_command(kShim + moe_conform() + " check --quiet --no-manifest --case " +
                                            bundled_case("topk_one.h5") + " --results " + result.string());
    CAPTURE(crashed_result.output);
    CHECK(crashed_result.exit_code == 2);
    CHECK(crashed_result.output.find("result file " + result.string() + ": reading it crashed or hung") != std::string::npos);
}

TEST_CASE("check names a golden file that crashes HDF5 while its datasets are read, not only its attributes") {
    // Before, only the attributes were read in the child: the full read then crashed the tool.
    moe::test::TempDir dir;
    const fs::path res = dir.path() / "res";
    REQUIRE(run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("topk_one.h5") +
                        " --write-results " + res.string()).exit_code == 0);
    const auto crashed = run_command("CRASH_ON_DATASET=hidden_states " + kShim + moe_conform() +
                                     " check --quiet --no-manifest --case " + bundled_case("topk_one.h5") +
                                     " --results " + (res / "topk_one.h5").string());
    CAPTURE(crashed.output);
    CHECK(crashed.exit_code == 2);
    CHECK(crashed.output.find("golden file " + bundled_case("topk_one.h5") + ": reading it crashed or hung") !=
          std::string::npos);
}

TEST_CASE("run --write-results names a golden file that crashes HDF5 while its identity is read, and exits 2") {
    moe::test::TempDir dir;
    const fs::path golden = dir.path() / "crashes-hdf5.h5";
    fs::copy_file(bundled_case("topk_one.h5"), golden);
    const std::string run = kShim + moe_conform() + " run --quiet --no-manifest --backend loop_f32 --write-results " +
                            (dir.path() / "res").string() + " --case ";
    const auto fine = run_command(run + bundled_case("topk_one.h5"));
    CAPTURE(fine.output);
    CHECK(fine.exit_code == 0);
    const auto crashed = run_command(run + golden.string());
    CAPTURE(crashed.output);
    CHECK(crashed.exit_code == 2);
    CHECK(crashed.output.find("golden file " + golden.string() + ": reading it crashed or hung the HDF5 library") !=
          std::string::npos);
}
