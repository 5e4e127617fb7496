// moe-conform shrink end to end, and mutants named on the command line: the shrunk case is a
// golden file that fails the same way, its repro line reruns it, and a case that passes has
// nothing to shrink.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "moe/golden/golden_file.hpp"
#include "moe/conformance/case_file_name.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kSuite = std::string(MOE_SOURCE_DIR) + "/data/golden";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string line_after(const std::string& s, const std::string& prefix) {
    const auto at = s.find(prefix);
    if (at == std::string::npos) return "";
    const auto start = at + prefix.size();
    return s.substr(start, s.find('\n', start) - start);
}

// The unfinished shrunk case a stopped shrink left in `out` (gemm2_medium's), which `plugin` still fails.
void check_unfinished_and_still_failing(const std::string& out, const std::string& plugin) {
    REQUIRE(fs::exists(out));
    const auto c = moe::golden::read_golden(out);
    CHECK(c.problem.name == "gemm2_medium_shrunk");
    CHECK(has(c.description, "the search had not finished"));
    const auto again = run_command(moe_conform() + " run --quiet --backend-lib " + plugin + " --case " + out);
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    CHECK(has(again.output, "0 passed, 1 failed"));
}

// A shrink `command` (its -o added) that stops (exit `code`) on the case as given, a one-token one:
// nothing smaller was found, nothing written.
void check_stopped_on_case_as_given(const std::string& command, int code, const TempDir& dir) {
    const std::string none = (dir / "none.h5").string();
    const auto first = run_command(command + " --case " + kSuite + "/gemm3_single_token.h5 -o " + none);
    CAPTURE(first.output);
    CHECK(first.exit_code == code);
    CHECK(has(first.output, "a backend run on the case as given (T 1,"));
    CHECK(has(first.output, "no smaller failing case was found before it: nothing was written"));
    CHECK_FALSE(fs::exists(none));
}

}  // namespace

TEST_CASE("shrink writes a much smaller case that still fails, and prints a repro line that reruns it") {
    TempDir dir;
    const std::string out = (dir / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend mutant:cpu_scatter_race --case " + kSuite +
                               "/gemm2_medium.h5 -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "before: T 67, K 4, E 16, H 96, I 48"));
    CHECK(has(r.output, "after:  T 1,"));
    CHECK(has(r.output, "wrote " + out));
    const std::string repro = line_after(r.output, "repro: moe-conform ");
    REQUIRE(repro == "run --backend mutant:cpu_scatter_race --case " + out);
    const auto again = run_command(moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    CHECK(has(again.output, "gemm2_medium_shrunk"));
    // The shrunk file is a golden case: moe-golden reads it, checksums and all.
    CHECK(run_command(moe::test::moe_golden() + " inspect " + out).exit_code == 0);
    // Its description says what it is; the original's (which tells shapes and values the shrunk
    // case no longer has) is kept only as the original's, after it.
    const auto original = moe::golden::read_golden(kSuite + "/gemm2_medium.h5");
    const auto shrunk = moe::golden::read_golden(out);
    CAPTURE(shrunk.description);
    CHECK(shrunk.description.rfind("Shrunk from case gemm2_medium for backend mutant:cpu_scatter_race (", 0) == 0);
    CHECK(has(shrunk.description, "): a smaller case that fails the same way; its shapes and values are the search's, "
                                  "not the original's. Original description: " + original.description));
}

TEST_CASE("what the plugin prints to stdout while shrink runs it goes to stderr: stdout holds shrink's summary alone") {
    // bad_plugin_prints fails every run (an ERROR) after a printf(): its lines came first on stdout.
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), err = (dir / "err.txt").string();
    const auto r = run_command("{ " + moe_conform() + " shrink --quiet --backend-lib " + MOE_PRINTS_PLUGIN + " --case " +
                               kSuite + "/exact_gemm2_lane1.h5 -o " + out + " 2>" + err + "; }");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind("shrunk exact_gemm2_lane1 for bad_plugin in ", 0) == 0);
    CHECK(has(r.output, "still:  ERROR: run() returned 7: device lost while running exact_gemm2_lane1"));
    CHECK_FALSE(has(r.output, "the plugin printed this line to stdout"));
    std::ifstream in(err);
    const std::string errors((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(has(errors, "the plugin printed this line to stdout"));
}

TEST_CASE("shrink's default output name comes from the case name made a plain file name (golden files are untrusted)") {
    TempDir dir;
    fs::create_directories(dir / "work");
    // A golden file whose case name points to the parent folder.
    moe::golden::GoldenCase c = moe::golden::read_golden(kSuite + "/gemm3_single_token.h5");
    c.problem.name = "../escaped";
    const std::string file = (dir / "hostile.h5").string();
    moe::golden::write_golden(file, c);
    const auto r = run_command("cd " + (dir / "work").string() + " && " + moe_conform() +
                               " shrink --quiet --backend mutant:hidden_off_by_one --case " + file);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    // The name was changed to make it a file name: it carries the case name's hash (case_file_stem).
    const std::string stem = moe::conformance::case_file_stem("../escaped_shrunk");
    CHECK(stem.rfind("_._escaped_shrunk-", 0) == 0);
    CHECK(has(r.output, "wrote " + stem + ".h5"));
    CHECK(fs::exists(dir / "work" / (stem + ".h5")));
    CHECK(!fs::exists(dir / "escaped_shrunk.h5"));
}

TEST_CASE("mutants by name: the bare name works as well as mutant:NAME; a passing case is not shrunk") {
    TempDir dir;
    const auto bare = run_command(moe_conform() + " run --quiet --backend hidden_off_by_one --case " + kSuite +
                                  "/gemm3_single_token.h5");
    CHECK(bare.exit_code == 1);
    const auto passing = run_command(moe_conform() + " shrink --quiet --backend loop_f32 --case " + kSuite +
                                     "/gemm3_single_token.h5 -o " + (dir / "x.h5").string());
    CAPTURE(passing.output);
    CHECK(passing.exit_code == 1);
    CHECK(has(passing.output, "does not fail on this backend (PASS): nothing to shrink"));
    const auto unknown = run_command(moe_conform() + " shrink --backend no_such --case " + kSuite + "/gemm3_single_token.h5");
    CHECK(unknown.exit_code == 2);
    CHECK(has(unknown.output, "or a selftest mutant"));
}

TEST_CASE("shrink says when --max-seconds, not the search, ended it: the case may shrink further") {
    TempDir dir;
    const auto r = run_command(moe_conform() + " shrink --quiet --max-seconds 1e-9 --backend mutant:hidden_off_by_one --case " +
                               kSuite + "/gemm3_single_token.h5 -o " + (dir / "x.h5").string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "stopped early: the search reached its time limit of 1e-09 s before it tried every edit"));
    // A search that ran to its end says nothing of the kind.
    const auto done = run_command(moe_conform() + " shrink --quiet --backend mutant:hidden_off_by_one --case " + kSuite +
                                  "/gemm3_single_token.h5 -o " + (dir / "y.h5").string());
    CHECK(done.exit_code == 0);
    CHECK_FALSE(has(done.output, "stopped early"));
}

TEST_CASE("shrink refuses a golden file whose stored output is not its inputs', as run does (exit 2)") {
    // Such a file fails every backend, the reference too; no candidate (its output recomputed)
    // fails with it, so after 3000 runs the damaged file itself was written as the shrunk case.
    TempDir dir;
    moe::golden::GoldenCase c = moe::golden::read_golden(kSuite + "/gemm3_single_token.h5");
    moe::Tensor& out = c.outputs.at("output");
    for (std::size_t i = 0; i < out.size(); ++i) out.set(i, 0.0);
    const std::string file = (dir / "damaged.h5").string();
    moe::golden::write_golden(file, c);
    const std::string small = (dir / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend reference --case " + file + " -o " + small);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "does not belong to these inputs"));
    CHECK_FALSE(fs::exists(small));
}

TEST_CASE("shrink --backend-lib: a plugin with a bug shrinks, and its repro line loads the plugin and fails") {
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), plugin = MOE_BROKEN_PLUGIN;
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + plugin + " --case " + kSuite +
                               "/gemm2_medium.h5 -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "after:  T 1,"));
    const std::string repro = line_after(r.output, "repro: moe-conform ");
    REQUIRE(repro == "run --backend-lib " + plugin + " --backend example_loops_broken --case " + out);
    const auto again = run_command(moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    // Naming another backend beside the plugin, or none at all: exit 2, said.
    auto bad = run_command(moe_conform() + " shrink --backend loop_f32 --backend-lib " + plugin + " --case " + kSuite +
                           "/gemm2_medium.h5 -o " + out);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "shrink runs one backend, and --backend-lib " + plugin + " is 'example_loops_broken'"));
    bad = run_command(moe_conform() + " shrink --case " + kSuite + "/gemm2_medium.h5 -o " + out);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "give --backend NAME or --backend-lib PATH.so"));
    // A plugin that crashes as it loads is named, exit 2, not the end of moe-conform.
    bad = run_command(moe_conform() + " shrink --backend-lib " + std::string(MOE_CRASHING_PLUGIN) + " --case " + kSuite +
                      "/gemm2_medium.h5 -o " + out);
    CAPTURE(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, MOE_CRASHING_PLUGIN));
}

TEST_CASE("shrink: a plugin that crashes on a smaller candidate ends the shrink (exit 6), naming the run, the file kept") {
    // The plugin fails every case and crashes (SIGSEGV) on one token: the search dies at T 1, and
    // the output file holds the case of the last accepted edit, which the plugin still fails.
    // Without the handler the shell saw 139 (here -1: killed) and nothing was said.
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), plugin = MOE_CRASHES_WHEN_SMALL;
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + plugin + " --case " + kSuite +
                               "/gemm2_medium.h5 -o " + out);
    CAPTURE(r.output);
    CHECK(r.exit_code == 6);
    CHECK(has(r.output, "moe-conform: error: a backend run on the candidate 'tokens 67 -> 1' (T 1, K 4, E 16, H 96, I 48,"));
    CHECK(has(r.output, "crashed the process (SIGSEGV, a segmentation fault: an invalid memory access); shrink stopped "
                        "(exit 6)\n"));
    CHECK(has(r.output, "the smallest failing case found before it is in " + out + "\n"));
    CHECK(has(r.output, "repro: moe-conform run --backend-lib " + plugin + " --backend bad_plugin --case " + out));
    check_unfinished_and_still_failing(out, plugin);
    // A crash on the case as given (one token already).
    check_stopped_on_case_as_given(moe_conform() + " shrink --quiet --backend-lib " + plugin, 6, dir);
}

TEST_CASE("shrink: a plugin that hangs on a smaller candidate ends the shrink (exit 5), naming the run, the file kept") {
    // The plugin fails every case and deadlocks on one token. Without the watchdog the shrink
    // never ended (--max-seconds is only looked at between runs): `timeout` bounds this test.
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), plugin = MOE_HANGS_WHEN_SMALL;
    const auto r = run_command("timeout 60 " + moe_conform() + " shrink --quiet --candidate-seconds 1 --backend-lib " +
                               plugin + " --case " + kSuite + "/gemm2_medium.h5 -o " + out);
    CAPTURE(r.output);
    CHECK(r.exit_code == 5);
    CHECK(has(r.output, "a backend run on the candidate 'tokens 67 -> 1' (T 1, K 4, E 16, H 96, I 48,"));
    CHECK(has(r.output, "has not returned after 1 s (--candidate-seconds)"));
    CHECK(has(r.output, "the smallest failing case found before it is in " + out));
    CHECK(has(r.output, "repro: moe-conform run --backend-lib " + plugin + " --backend bad_plugin --case " + out));
    check_unfinished_and_still_failing(out, plugin);
    // A hang on the case as given (one token already).
    check_stopped_on_case_as_given(
        "timeout 60 " + moe_conform() + " shrink --quiet --candidate-seconds 1 --backend-lib " + plugin, 5, dir);
}

TEST_CASE("shrink: a backend that does not fail the shrunk case the same way every time exits 4, the file kept") {
    // The plugin fails a case on its first run and errs on a rerun of the same inputs: the search
    // shrinks as usual, and the two reruns of the shrunk case differ. Exit 0 read as success.
    TempDir dir;
    const std::string out = (dir / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + std::string(MOE_FLAKY_ON_REPEAT) +
                               " --case " + kSuite + "/gemm2_medium.h5 -o " + out);
    CAPTURE(r.output);
    CHECK(r.exit_code == 4);
    CHECK(has(r.output, "warning: two more runs did not both fail the same way: the backend is not deterministic"));
    CHECK(has(r.output, "so its repro line may pass; " + out + " is kept (exit 4)"));
    CHECK(has(r.output, "after:  T 1,"));
    REQUIRE(fs::exists(out));
    CHECK(moe::golden::read_golden(out).problem.name == "gemm2_medium_shrunk");
}

TEST_CASE("shrink --case: a name not in the suite is named with the suite and a close name; a changed file is refused") {
    TempDir dir;
    // A typo in the bundled suite's folder, and a case name without .h5: exit 2 before anything runs.
    for (const std::string wrong : {"gemm2_mediun.h5", "gemm2_medium"}) {
        const auto r = run_command(moe_conform() + " shrink --backend loop_f32 --case " + kSuite + "/" + wrong);
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, "--case " + kSuite + "/" + wrong + ": no case " + wrong + " in the suite " + kSuite +
                                " (its MANIFEST.sha256 lists "));
        CHECK(has(r.output, "did you mean " + kSuite + "/gemm2_medium.h5?"));
    }
    const auto far = run_command(moe_conform() + " shrink --backend loop_f32 --case " + kSuite + "/qwen_everything.h5");
    CHECK(far.exit_code == 2);
    CHECK(has(far.output, "no case qwen_everything.h5 in the suite " + kSuite));
    CHECK_FALSE(has(far.output, "did you mean"));
    const auto nowhere = run_command(moe_conform() + " shrink --backend loop_f32 --case " + (dir / "x.h5").string());
    CHECK(nowhere.exit_code == 2);
    CHECK(has(nowhere.output, "--case " + (dir / "x.h5").string() + ": no such file"));
    // A file its folder's manifest lists with another digest is refused, as run refuses it
    // (--no-manifest skips the check).
    fs::create_directories(dir / "suite");
    fs::copy_file(kSuite + "/MANIFEST.sha256", dir / "suite" / "MANIFEST.sha256");
    moe::golden::GoldenCase c = moe::golden::read_golden(kSuite + "/gemm3_single_token.h5");
    c.description += " (changed)";
    const std::string changed = (dir / "suite" / "gemm3_single_token.h5").string();
    moe::golden::write_golden(changed, c);
    const std::string out = (dir / "small.h5").string();
    const auto refused = run_command(moe_conform() + " shrink --quiet --backend mutant:hidden_off_by_one --case " + changed +
                                     " -o " + out);
    CAPTURE(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK(has(refused.output, "gemm3_single_token.h5: SHA-256 differs from"));
    CHECK_FALSE(fs::exists(out));
    const auto skipped = run_command(moe_conform() + " shrink --quiet --no-manifest --backend mutant:hidden_off_by_one --case " +
                                     changed + " -o " + out);
    CAPTURE(skipped.output);
    CHECK(skipped.exit_code == 0);
}
