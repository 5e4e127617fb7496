// `moe-conform check` as a new user meets it (a walkthrough of the result-file door): known
// failures gated with --expect as run gates them, result folders from CI shards, and the hints
// its refusals give (stage names, a file name for a case name, .npy layouts, bf16, the hash).
// The result files are written by `run --write-results` and then edited with h5py and numpy, as a
// user's framework writes them. MOE_CONFORM_UNDER_TEST names another moe-conform to check with
// (an older build, to see these fail); the files are always written by this build.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::run_command;
using moe::test::run_python;
using moe::test::TempDir;
using moe::test::bundled_case;
using moe::test::has;
namespace fs = std::filesystem;

namespace {

const std::string kGemm3 = "gemm3_qwen_openvino_f32", kGemm2 = "gemm2_gptoss_spec_f32";

std::string tool() {
    const char* other = std::getenv("MOE_CONFORM_UNDER_TEST");
    return other && *other ? other : moe::test::moe_conform();
}

std::string golden(const std::string& name) { return bundled_case(name + ".h5"); }

// Correct result files of `cases` (loop_f32's outputs and stages) in `dir`, as <case>.h5.
void write_results(const fs::path& dir, const std::vector<std::string>& cases) {
    std::string command = moe::test::moe_conform() + " run --quiet --backend loop_f32 --write-results " + dir.string();
    for (const auto& c : cases) command += " --case " + golden(c);
    const auto r = run_command(command);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

// h5py code run on the result file `file` (opened read-write as f), numpy as np.
void edit(const fs::path& file, const std::string& code) {
    const auto r = run_python("import h5py, numpy as np\nf = h5py.File('" + file.string() + "', 'r+')\n" + code +
                              "\nf.close()\n");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

// `check` on the two cases with the results in `results` (and more flags).
moe::test::CommandResult check_two(const std::string& results, const std::string& more = "") {
    return run_command(tool() + " check --quiet --case " + golden(kGemm3) + " --case " + golden(kGemm2) +
                       " --results " + results + more);
}

}  // namespace

TEST_CASE("check --expect: known failures of result files are XFAIL, a stale entry XPASS, as in run") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3, kGemm2});
    edit(results / (kGemm3 + ".h5"), "f['outputs/output'][0, 0] = np.nan");
    const fs::path known = dir / "known.json";
    std::ofstream(known) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
      {"backend": "*", "case": ")" << kGemm3 << R"(", "status": "FAIL", "reason": "NaN at [0,0]", "ticket": "#1"}]})";

    SUBCASE("the failure listed: XFAIL, exit 0; its repro line reads the file too") {
        const auto r = check_two(results.string(), " --expect " + known.string());
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "1 passed, 0 failed, 0 skipped, 1 xfail"));
        CHECK(has(r.output, "--expect " + known.string()));
    }
    SUBCASE("without it the same results FAIL, exit 1") {
        const auto r = check_two(results.string());
        INFO(r.output);
        CHECK(r.exit_code == 1);
    }
    SUBCASE("the listed case passing: XPASS, exit 1") {
        write_results(results, {kGemm3});  // fixed
        const auto r = check_two(results.string(), " --expect " + known.string());
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, "1 xpass"));
    }
    SUBCASE("an entry for no result is noted; the backend is the implementation's name") {
        std::ofstream(known) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
          {"backend": "loop_f32", "case": ")" << kGemm3 << R"(", "status": "FAIL", "reason": "NaN"},
          {"backend": "someone_else", "case": "*", "status": "FAIL", "reason": "not ours"}]})";
        const auto r = check_two(results.string(), " --expect " + known.string());
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "1 of the 2 entries of " + known.string() + " applied to no result"));
    }
    SUBCASE("a malformed file: run's message, exit 2") {
        std::ofstream(known) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
          {"backend": "*", "case": "x", "status": "FAIL"}]})";
        const auto r = check_two(results.string(), " --expect " + known.string());
        const auto run = run_command(tool() + " run --quiet --backend loop_f32 --case " + golden(kGemm3) + " --expect " +
                                     known.string());
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, "\"reason\" is missing"));
        CHECK(run.exit_code == 2);
        CHECK(has(run.output, "\"reason\" is missing"));
    }
}

TEST_CASE("a results folder is searched with its subfolders (CI shard artifacts); a case answered twice is refused") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results / "shard_1", {kGemm3});
    write_results(results / "shard_2" / "deeper", {kGemm2});
    const auto r = check_two(results.string());
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "2 passed, 0 failed"));

    write_results(results / "shard_3", {kGemm2});  // a second answer to gemm2_gptoss_spec_f32
    const auto twice = check_two(results.string());
    INFO(twice.output);
    CHECK(twice.exit_code == 2);
    CHECK(has(twice.output, (results / "shard_3" / (kGemm2 + ".h5")).string() + ": case '" + kGemm2 +
                                "' already has a result, " + (results / "shard_2" / "deeper" / (kGemm2 + ".h5")).string()));

    fs::remove_all(results);
    fs::create_directories(results / "empty");
    const auto none = check_two(results.string());
    INFO(none.output);
    CHECK(none.exit_code == 2);
    CHECK(has(none.output, "holds no .h5 or .npy result file, nor do its subfolders"));
}

TEST_CASE("a stage that is not one of the expert type's names lists the type's stage names") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3, kGemm2});
    edit(results / (kGemm3 + ".h5"), "f['stages/activation'] = np.zeros((2, 2, 2), np.float32)");
    edit(results / (kGemm2 + ".h5"), "f['stages/gate'] = f['stages/act'][()]");
    const auto r = check_two(results.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "stage 'activation' is not a stage of GEMM3_SWIGLU (its stages: gate, up, act, down)"));
    CHECK(has(r.output, "stage 'gate' is not a stage of GEMM2_BIAS_SWIGLU_CLAMP (its stages: gate_up, act, down)"));
}

TEST_CASE("a result whose case attribute is the golden file's name, or a typo of the case, says which case it meant") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3, kGemm2});
    edit(results / (kGemm3 + ".h5"), "f.attrs['case'] = '" + kGemm3 + ".h5'");
    edit(results / (kGemm2 + ".h5"), "f.attrs['case'] = 'gemm2_gptoss_spec_f3'");
    // The files given one by one: a folder with --case passes over results of other cases.
    const std::string files = (results / (kGemm3 + ".h5")).string() + " " + (results / (kGemm2 + ".h5")).string();
    const auto r = check_two(files);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "answers case '" + kGemm3 + ".h5', which is not among the golden files of this run (an extra "
                        "result); did you mean '" + kGemm3 + "'?"));
    CHECK(has(r.output, "answers case 'gemm2_gptoss_spec_f3', which is not among the golden files of this run (an "
                        "extra result); did you mean '" + kGemm2 + "'?"));
    edit(results / (kGemm2 + ".h5"), "f.attrs['case'] = 'something_else_entirely'");
    const auto far = check_two(files);
    INFO(far.output);
    CHECK(has(far.output, "answers case 'something_else_entirely', which is not among the golden files of this run (an "
                          "extra result)\n"));
}

TEST_CASE(".npy results: Fortran order read as numpy reads it; bf16 bits and a missing --precision say what to do") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3});
    const std::string save = "import h5py, numpy as np\ny = h5py.File('" + (results / (kGemm3 + ".h5")).string() +
                             "', 'r')['outputs/output'][()]\nassert y.shape[0] != y.shape[1]\n";
    const auto npy = [&](const std::string& name) { return (dir / name).string(); };
    const auto py = run_python(save + "np.save('" + npy("fortran.npy") + "', np.asfortranarray(y))\n" +
                               "np.save('" + npy("transposed_view.npy") + "', y.T.copy().T)\n" +  // Fortran too
                               "np.save('" + npy("bits.npy") + "', (y.view(np.uint32) >> 16).astype(np.uint16))\n" +
                               "np.save('" + npy("c.npy") + "', y)\n");
    INFO(py.output);
    REQUIRE(py.exit_code == 0);
    const auto check = [&](const std::string& name, const std::string& more) {
        return run_command(tool() + " check --quiet --case " + golden(kGemm3) + " --results " + npy(name) + more);
    };
    for (const char* name : {"fortran.npy", "transposed_view.npy"}) {
        const auto r = check(name, " --precision f32");
        INFO(r.output);
        CHECK(r.exit_code == 0);  // the same values as the C-ordered file: transposed back correctly
        CHECK(has(r.output, "1 passed, 0 failed"));
    }
    // Reordering holds the file's data twice: the memory budget counts both copies. (The file is
    // its data and a 128-byte header: 1.5 times its size is between once and twice the data. The
    // golden file needs more than that budget and is refused too: only the .npy's refusal counts.)
    const std::string budget = " --max-memory " + std::to_string(fs::file_size(npy("c.npy")) * 3 / 2);
    const auto once = check("c.npy", " --precision f32" + budget);
    INFO(once.output);
    CHECK(!has(once.output, "c.npy: its data needs"));
    const auto twice = check("fortran.npy", " --precision f32" + budget);
    INFO(twice.output);
    CHECK(twice.exit_code == 2);
    CHECK(has(twice.output, "(twice its size: Fortran order is reordered), more than the memory budget"));
    const auto bits = check("bits.npy", " --precision f32");
    INFO(bits.output);
    CHECK(bits.exit_code == 2);
    CHECK(has(bits.output, "npy dtype '<u2': expected little-endian float64, float32 or float16; bf16 saved as its "
                           "bits? widen bf16 to float32 (exact)"));
    const auto bare = check("c.npy", "");
    INFO(bare.output);
    CHECK(bare.exit_code == 2);
    CHECK(has(bare.output, "c.npy: declares no precision (a .npy result holds the array alone): give --precision "
                           "COMPUTE[/STORAGE]"));
    CHECK(!has(bare.output, "root attributes"));
}

TEST_CASE("bf16 bits without element_type: the h5py line that declares them, said three times, then counted") {
    TempDir dir;
    const fs::path results = dir / "results";
    const std::vector<std::string> cases = {kGemm3, kGemm2, "topk_one", "topk_equals_experts", "gemm2_medium"};
    write_results(results, cases);
    for (std::size_t i = 0; i + 1 < cases.size(); ++i)  // the last file: another problem
        edit(results / (cases[i] + ".h5"),
             "y = f['outputs/output'][()]\ndel f['outputs/output']\n"
             "f['outputs/output'] = (y.view(np.uint32) >> 16).astype(np.uint16)");
    edit(results / (cases.back() + ".h5"), "del f.attrs['compute_type']\ndel f.attrs['storage_type']");
    std::string command = tool() + " check --quiet --results " + results.string();
    for (const auto& c : cases) command += " --case " + golden(c);
    const auto r = run_command(command);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    const std::string fix = "dataset /outputs/output: holds 16-bit integers and no element_type attribute: bf16 bit "
                            "patterns? declare them; in h5py: dset.attrs[\"element_type\"] = \"bf16\"";
    std::size_t said = 0;
    for (auto at = r.output.find(fix); at != std::string::npos; at = r.output.find(fix, at + 1)) ++said;
    CHECK(said == 3);
    CHECK(has(r.output, "moe-conform: error: ... and 1 more files with the same problem\n"));
    CHECK(has(r.output, "gemm2_medium.h5: declares no precision"));  // another problem: in full
    CHECK(has(r.output, "5 problem(s) with the golden or result files"));
}

TEST_CASE("a FAIL whose output is stored narrower than the case's data type says so, with the two fixes") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3});
    edit(results / (kGemm3 + ".h5"),
         "y = f['outputs/output'][()]\ndel f['outputs/output']\nf['outputs/output'] = y.astype(np.float16)");
    const std::string command = tool() + " check --case " + golden(kGemm3) + " --results " + results.string();
    const auto r = run_command(command);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "NOTE: the output is stored as f16 while the case's data type is f32: a kernel's output is "
                        "compared in the case's type; store it in f32, or declare storage_type f16 (--precision "
                        "f32/f16) if the kernel's output really is f16"));
    // Declared as stored: the bound allows for it, and nothing is noted.
    const auto declared = run_command(command + " --precision f32/f16");
    INFO(declared.output);
    CHECK(declared.exit_code == 0);
    CHECK(!has(declared.output, "NOTE:"));
}

TEST_CASE("an upper-case golden_sha256 is refused as the format says, with the fix named") {
    TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, {kGemm3});
    edit(results / (kGemm3 + ".h5"), "f.attrs['golden_sha256'] = f.attrs['golden_sha256'].upper()");
    const auto r = run_command(tool() + " check --quiet --case " + golden(kGemm3) + " --results " + results.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "golden_sha256") );
    CHECK(has(r.output, "has upper-case hex digits; the format wants lowercase: lowercase it"));
}
