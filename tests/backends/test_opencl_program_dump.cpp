// MOE_OPENCL_DUMP_BINARIES=DIR: the programs a run builds are written to DIR (binary and a note of
// sources and options), and a value that is not a folder is refused up front (exit 2, named).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

namespace fs = std::filesystem;
using moe::test::has;

namespace {

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
}

const std::string kCase = moe::test::bundled_case("compressed_u4_zp_codes_high.h5");

}  // namespace

TEST_CASE("MOE_OPENCL_DUMP_BINARIES writes each built program, its sources and its options") {
    moe::test::TempDir dir;
    const auto r = moe::test::run_command("MOE_OPENCL_DUMP_BINARIES=" + dir.path().string() + " " +
                                          moe::test::moe_conform() + " run --backend opencl --quiet --case " + kCase);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    // A compressed case builds the main program and the compressed-weight GEMMs.
    int bins = 0;
    for (const char* part : {"main-", "compressed-"}) {
        CAPTURE(part);
        bool found = false;
        for (const auto& e : fs::directory_iterator(dir.path())) {
            const std::string name = e.path().filename().string();
            if (name.rfind(part, 0) != 0 || e.path().extension() != ".bin") continue;
            found = true;
            ++bins;
            CHECK(fs::file_size(e.path()) > 0);
            fs::path note = e.path();
            note.replace_extension(".txt");
            const std::string text = read_text(note);
            CHECK(has(text, "sources: common.cl"));
            CHECK(has(text, "options: -cl-std=CL1.2"));
            CHECK(has(text, "-DMOE_VW="));
        }
        CHECK(found);
    }
    CHECK(bins == 2);
    for (const auto& e : fs::directory_iterator(dir.path()))  // written whole: no temporary left behind
        CHECK(!has(e.path().filename().string(), ".tmp"));
}

TEST_CASE("MOE_OPENCL_DUMP_BINARIES that is not a folder is refused before anything runs") {
    moe::test::TempDir dir;
    const fs::path file = dir.path() / "not-a-folder";
    std::ofstream(file) << "x";
    const auto r = moe::test::run_command("MOE_OPENCL_DUMP_BINARIES=" + file.string() + " " + moe::test::moe_conform() +
                                          " run --backend opencl --quiet --case " + kCase);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "MOE_OPENCL_DUMP_BINARIES: " + file.string() + " is not a folder"));
}
