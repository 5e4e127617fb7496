// moe-conform selftest on a machine without an OpenCL platform (OCL_ICD_VENDORS pointing to an
// empty folder): the opencl mutants are reported SKIPPED with the reason, counted out of the
// verdict, every other mutant is caught, and the command exits 0.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::has;

namespace {

// The selftest line of a mutant ("  name   SKIPPED  reason"), or "".
std::string mutant_line(const std::string& output, const std::string& name) {
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("  " + name + " ", 0) == 0) return line;
    return "";
}

}  // namespace

TEST_CASE("selftest without an OpenCL platform: the opencl mutants SKIPPED, the others caught, exit 0") {
    moe::test::TempDir empty;
    const auto r = moe::test::run_command("OCL_ICD_VENDORS=" + empty.path().string() + " " + moe::test::moe_conform() +
                                          " selftest --suite " + moe::test::kBundledSuite);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    for (const char* m : {"opencl_tile_edge_dropped", "opencl_missing_barrier", "opencl_tile_row_skipped",
                          "opencl_wrong_offset"}) {
        CAPTURE(m);
        const std::string line = mutant_line(r.output, m);
        CHECK(has(line, " SKIPPED  no OpenCL platform found"));
    }
    // "selftest: N of N mutants caught (4 skipped: backend unavailable); all correct backends pass"
    const std::regex line(R"(selftest: (\d+) of (\d+) mutants caught \(4 skipped: backend unavailable\); )"
                          R"(all correct backends pass)");
    std::smatch summary;
    REQUIRE(std::regex_search(r.output, summary, line));
    CHECK(summary[1].str() == summary[2].str());
    CHECK(!has(r.output, "MISSED"));
    // Progress on stderr: a line as each correct backend and mutant finishes, numbered to the end.
    const std::regex progress(R"(selftest: \[(\d+)/(\d+)\] ([a-z0-9_]+): )");
    std::size_t lines = 0, total = 0;
    for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), progress); it != std::sregex_iterator(); ++it) {
        ++lines;
        CHECK(std::stoul((*it)[1].str()) == lines);
        total = std::stoul((*it)[2].str());
    }
    CHECK(lines > 4);
    CHECK(lines == total);
    CHECK(has(r.output, "] opencl_missing_barrier: SKIPPED ("));
    CHECK(has(r.output, "] cpu: ok, "));
}

TEST_CASE("--device without an OpenCL platform: the cases SKIP with the reason (the machine has no driver), exit 77") {
    moe::test::TempDir empty;
    const auto r = moe::test::run_command("OCL_ICD_VENDORS=" + empty.path().string() + " " + moe::test::moe_conform() +
                                          " run --backend opencl --device 9:9 --case " +
                                          moe::test::bundled_case("topk_one.h5"));
    CAPTURE(r.output);
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "no OpenCL platform found"));
}
