// What a user pastes and reads after a run: repro lines that run as pasted (the tool named as it
// was invoked, not a bare `moe-conform` a shell may not find), check's missing result that names
// the results it passed over and the one most likely meant, and moe-bench's word on a row its
// plugin declines, where the progress line named it. MOE_CONFORM_UNDER_TEST and MOE_BENCH_UNDER_TEST
// name other builds to check (an older one, to see these fail); files are written by this build.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

const std::string kCase = bundled_case("exact_gemm2_lane1.h5");  // a case the mutant fails in milliseconds
const std::string kMutant = "mutant:bias1_dropped";
const std::string kRerun = " run --backend " + kMutant + " --case ";  // a repro line after the tool

std::string under_test(const char* variable, const std::string& built) {
    const char* other = std::getenv(variable);
    return other && *other ? other : built;
}
std::string tool() { return under_test("MOE_CONFORM_UNDER_TEST", moe::test::moe_conform()); }
std::string bench() { return under_test("MOE_BENCH_UNDER_TEST", moe::test::moe_bench()); }

// The first `repro: ` line's command.
std::string repro_of(const std::string& output) {
    const auto at = output.find("repro: ");
    if (at == std::string::npos) return "(no repro line)";
    const auto begin = at + 7;
    return output.substr(begin, output.find('\n', begin) - begin);
}

std::string file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The tool as `cd FOLDER && BIN/moe-conform` reaches it: its folder's parent, and the relative path.
struct Relative {
    std::string folder, path;
};
Relative relative_tool() {
    const fs::path t(tool());
    return {t.parent_path().parent_path().string(), (t.parent_path().filename() / t.filename()).string()};
}

// h5py code run on the result file `file` (opened read-write as f).
void edit(const fs::path& file, const std::string& code) {
    const auto r = run_python("import h5py\nf = h5py.File('" + file.string() + "', 'r+')\n" + code + "\nf.close()\n");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

// Result files of `cases` (golden file stems) written by `backend` into `dir`, as <case>.h5.
void write_results(const fs::path& dir, const std::string& backend, const std::vector<std::string>& cases) {
    std::string command = moe::test::moe_conform() + " run --quiet --backend " + backend + " --write-results " + dir.string();
    for (const auto& c : cases) command += " --case " + bundled_case(c + ".h5");
    const auto r = run_command(command);
    INFO(r.output);
    REQUIRE((r.exit_code == 0 || r.exit_code == 1));  // a mutant's results fail, and are written
}

}  // namespace

TEST_CASE("repro lines name moe-conform as it was invoked, and run as pasted") {
    SUBCASE("by its full path: that path, and the line runs from any folder") {
        const auto r = run_command(tool() + " run --quiet --backend " + kMutant + " --case " + kCase);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        const std::string repro = repro_of(r.output);
        CHECK(repro == tool() + kRerun + kCase);
        const auto again = run_command("cd / && " + repro + " --quiet");
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);
    }
    SUBCASE("by a path relative to the current folder: that path as typed, as the --case path beside it") {
        const Relative rel = relative_tool();
        const auto r = run_command("cd " + rel.folder + " && " + rel.path + " run --quiet --backend " + kMutant +
                                   " --case " + kCase);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        const std::string repro = repro_of(r.output);
        CHECK(repro == rel.path + kRerun + kCase);
        const auto again = run_command("cd " + rel.folder + " && " + repro + " --quiet");
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);
    }
    SUBCASE("by its bare name, found on PATH: the bare name") {
        const fs::path t(tool());
        const std::string path = "PATH=" + t.parent_path().string() + ":$PATH ";
        const auto r = run_command(path + t.filename().string() + " run --quiet --backend " + kMutant + " --case " + kCase);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(repro_of(r.output) == t.filename().string() + kRerun + kCase);
    }
    SUBCASE("by a name PATH does not lead to (a launcher's argv[0]): this binary's absolute path") {
        const auto r = run_command("PATH=/usr/bin:/bin bash -c 'exec -a moe-conform \"$0\" \"$@\"' " + tool() +
                                   " run --quiet --backend " + kMutant + " --case " + kCase);
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(repro_of(r.output) == fs::canonical(tool()).string() + kRerun + kCase);
    }
}

TEST_CASE("check's and shrink's repro lines and the JSON and JUnit reports name the tool as the text does") {
    const TempDir dir;
    const Relative rel = relative_tool();
    const std::string in_folder = "cd " + rel.folder + " && ";

    SUBCASE("check: a failing result's repro line, in the text, JSON and JUnit reports") {
        const fs::path results = dir / "results";
        write_results(results, kMutant, {"exact_gemm2_lane1"});
        const fs::path json = dir / "r.json", junit = dir / "r.xml";
        const auto r = run_command(in_folder + rel.path + " check --quiet --case " + kCase + " --results " +
                                   results.string() + " --json " + json.string() + " --junit " + junit.string());
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        const std::string repro = repro_of(r.output);
        CHECK(repro == rel.path + " check --case " + kCase + " --results " + (results / "exact_gemm2_lane1.h5").string());
        CHECK(has(file_text(json), "\"repro\": \"" + repro + "\""));
        CHECK(has(file_text(junit), repro));
        const auto again = run_command(in_folder + repro + " --quiet");
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);
    }
    SUBCASE("shrink: the repro line of the shrunk case") {
        const std::string out = (dir / "small.h5").string();
        const auto r = run_command(in_folder + rel.path + " shrink --quiet --backend " + kMutant + " --case " + kCase +
                                   " -o " + out);
        CAPTURE(r.output);
        REQUIRE(r.exit_code == 0);
        const std::string repro = repro_of(r.output);
        CHECK(repro == rel.path + kRerun + out);
        const auto again = run_command(in_folder + repro + " --quiet");
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);
    }
    SUBCASE("selftest: the catch matrix's repro lines") {
        const fs::path json = dir / "s.json";
        const auto r = run_command(in_folder + rel.path + " selftest --quiet --family loop --shard 9/9 --json " +
                                   json.string());
        CAPTURE(r.output);
        CHECK(r.exit_code == 0);
        CHECK(has(file_text(json), "\"repro\": \"" + rel.path + " run --backend mutant:"));
        CHECK_FALSE(has(file_text(json), "\"repro\": \"moe-conform run"));
    }
}

TEST_CASE("check --case FILE --results FOLDER: a missing result names the results passed over and the one meant") {
    // The folder's results for other cases are passed over (a folder may answer a whole suite);
    // a typo in the `case` attribute read as a bare "missing result", the file never named.
    const TempDir dir;
    const fs::path results = dir / "results";
    write_results(results, "loop_f32", {"exact_gemm2_lane1", "topk_one"});
    const std::string lane1 = (results / "exact_gemm2_lane1.h5").string(), topk = (results / "topk_one.h5").string();
    const auto check = [&] {
        return run_command(tool() + " check --quiet --case " + kCase + " --results " + results.string());
    };
    const std::string missing = "no result file answers this case (missing result)";

    SUBCASE("a typo in the case attribute: did you mean that file") {
        edit(lane1, "f.attrs['case'] = 'exact_gemm2_lnae1'");
        const auto r = check();
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, missing + "; did you mean " + lane1 + "? Its `case` attribute is 'exact_gemm2_lnae1', not "
                            "this case's name 'exact_gemm2_lane1' (the results given answer 2 other cases: " + lane1 +
                            " (case 'exact_gemm2_lnae1'), " + topk + " (case 'topk_one'))"));
    }
    SUBCASE("a result file named for the case that answers another: did you mean that file") {
        fs::remove(lane1);
        fs::rename(topk, lane1);
        const auto r = check();
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, missing + "; did you mean " + lane1 + "? Its `case` attribute is 'topk_one', not this "
                            "case's name 'exact_gemm2_lane1' (the results given answer 1 other case: " + lane1 +
                            " (case 'topk_one'))"));
    }
    SUBCASE("nothing close: the results passed over are named, and what matches a result to its case") {
        fs::remove(lane1);
        const auto r = check();
        CAPTURE(r.output);
        CHECK(r.exit_code == 1);
        CHECK(has(r.output, missing + "; the results given answer 1 other case: " + topk + " (case 'topk_one') (a "
                            "result answers the case its `case` attribute names: 'exact_gemm2_lane1' here)"));
        CHECK_FALSE(has(r.output, "did you mean"));
        // Its repro line names the results given (no `<...>` a shell would take for a redirect),
        // and reruns to the same ERROR.
        const std::string repro = repro_of(r.output);
        CHECK(repro == tool() + " check --case " + kCase + " --results " + results.string());
        CHECK(run_command(repro + " --quiet").exit_code == 1);
    }
}

TEST_CASE("moe-bench --backend-lib: a row the plugin declines is said under the progress line that named it") {
    // bad_plugin_declines_f16 supports f32 data only. The progress line promised the f16 row timed
    // rounds, and its table line ("skipped") came only after every data type had run.
    const TempDir dir;
    const fs::path err = dir / "err.txt";
    // Its stderr alone (run_command adds 2>&1 after the braces).
    const auto r = run_command("{ " + bench() + " --backend-lib " + MOE_DECLINES_F16 + " --tokens 1 --reps 1 " +
                               "--dtype f32,f16 --experts 4 --topk 2 --hidden 64 --inter 64 2> " + err.string() + "; }");
    const std::string stderr_text = file_text(err);
    CAPTURE(r.output);
    CAPTURE(stderr_text);
    CHECK(r.exit_code == 0);
    const std::string f16 = "moe-bench: custom, T = 1: making the problems (f16), then 1 timed rounds\n";
    CHECK(has(stderr_text, f16 + "moe-bench: custom, T = 1: f16 not timed: bad_plugin does not support it: f32 data "
                                "only, not dtype 2\n"));
    CHECK_FALSE(has(stderr_text, "f32 not timed"));  // the row it times gets no such line
}
