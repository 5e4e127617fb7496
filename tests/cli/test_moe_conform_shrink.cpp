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
#include "moe/spec/problem.hpp"
#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::TempDir;
using moe::test::kBundledSuite;
using moe::test::bundled_case;
using moe::test::has;
namespace fs = std::filesystem;

namespace {

std::string line_after(const std::string& s, const std::string& prefix) {
    const auto at = s.find(prefix);
    if (at == std::string::npos) return "";
    const auto start = at + prefix.size();
    return s.substr(start, s.find('\n', start) - start);
}

// The sizes of a golden file's case (the problem validated, as run validates it).
moe::Dims dims_of(const std::string& file) { return moe::validate(moe::golden::read_golden(file).problem); }

}  // namespace

TEST_CASE("shrink writes a much smaller case that still fails, and prints a repro line that reruns it") {
    TempDir dir;
    const std::string out = (dir / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend mutant:cpu_scatter_race --case " +
                               bundled_case("gemm2_medium.h5") + " -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "before: T 67, K 4, E 16, H 96, I 48"));
    CHECK(has(r.output, "after:  T 1,"));
    CHECK(has(r.output, "wrote " + out));
    const std::string repro = line_after(r.output, "repro: " + moe_conform() + " ");
    REQUIRE(repro == "run --backend mutant:cpu_scatter_race --case " + out);
    const auto again = run_command(moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    CHECK(has(again.output, "gemm2_medium_shrunk"));
    // The shrunk file is a golden case: moe-golden reads it, checksums and all.
    CHECK(run_command(moe::test::moe_golden() + " inspect " + out).exit_code == 0);
    // Its description says what it is; the original's (which tells shapes and values the shrunk
    // case no longer has) is kept only as the original's, after it.
    const auto original = moe::golden::read_golden(bundled_case("gemm2_medium.h5"));
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
                               bundled_case("exact_gemm2_lane1.h5") + " -o " + out + " 2>" + err + "; }");
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
    moe::golden::GoldenCase c = moe::golden::read_golden(bundled_case("gemm3_single_token.h5"));
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
    const auto bare = run_command(moe_conform() + " run --quiet --backend hidden_off_by_one --case " +
                                  bundled_case("gemm3_single_token.h5"));
    CHECK(bare.exit_code == 1);
    const auto passing = run_command(moe_conform() + " shrink --quiet --backend loop_f32 --case " +
                                     bundled_case("gemm3_single_token.h5") + " -o " + (dir / "x.h5").string());
    CAPTURE(passing.output);
    CHECK(passing.exit_code == 1);
    CHECK(has(passing.output, "does not fail on this backend (PASS): nothing to shrink"));
    const auto unknown =
        run_command(moe_conform() + " shrink --backend no_such --case " + bundled_case("gemm3_single_token.h5"));
    CHECK(unknown.exit_code == 2);
    CHECK(has(unknown.output, "or a selftest mutant"));
}

TEST_CASE("shrink says when --max-seconds, not the search, ended it: the case may shrink further") {
    TempDir dir;
    const auto r = run_command(moe_conform() + " shrink --quiet --max-seconds 1e-9 --backend mutant:hidden_off_by_one --case " +
                               bundled_case("gemm3_single_token.h5") + " -o " + (dir / "x.h5").string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "stopped early: the search reached its time limit of 1e-09 s before it tried every edit"));
    // A search that ran to its end says nothing of the kind.
    const auto done = run_command(moe_conform() + " shrink --quiet --backend mutant:hidden_off_by_one --case " +
                                  bundled_case("gemm3_single_token.h5") + " -o " + (dir / "y.h5").string());
    CHECK(done.exit_code == 0);
    CHECK_FALSE(has(done.output, "stopped early"));
}

TEST_CASE("shrink refuses a golden file whose stored output is not its inputs', as run does (exit 2)") {
    // Such a file fails every backend, the reference too; no candidate (its output recomputed)
    // fails with it, so after 3000 runs the damaged file itself was written as the shrunk case.
    TempDir dir;
    moe::golden::GoldenCase c = moe::golden::read_golden(bundled_case("gemm3_single_token.h5"));
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
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + plugin + " --case " +
                               bundled_case("gemm2_medium.h5") + " -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "after:  T 1,"));
    const std::string repro = line_after(r.output, "repro: " + moe_conform() + " ");
    REQUIRE(repro == "run --backend-lib " + plugin + " --backend example_loops_broken --case " + out);
    const auto again = run_command(moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    // Naming another backend beside the plugin, or none at all: exit 2, said.
    auto bad = run_command(moe_conform() + " shrink --backend loop_f32 --backend-lib " + plugin + " --case " +
                           bundled_case("gemm2_medium.h5") + " -o " + out);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "shrink runs one backend, and --backend-lib " + plugin + " is 'example_loops_broken'"));
    bad = run_command(moe_conform() + " shrink --case " + bundled_case("gemm2_medium.h5") + " -o " + out);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "give --backend NAME or --backend-lib PATH.so"));
    // A plugin that crashes as it loads is named, exit 2, not the end of moe-conform.
    bad = run_command(moe_conform() + " shrink --backend-lib " + std::string(MOE_CRASHING_PLUGIN) + " --case " +
                      bundled_case("gemm2_medium.h5") + " -o " + out);
    CAPTURE(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, MOE_CRASHING_PLUGIN));
}

TEST_CASE("shrink: a plugin that crashes on a case shrinks it to a small case that crashes the same way, which run reproduces") {
    // The plugin computes every case right but segfaults on more than 8 experts or 64 hidden
    // features. Each run is in a worker process, so the crash is the verdict to keep: the search
    // goes on, and ends at the smallest layer that still crashes. Before, the first run (the case
    // as given) ended the shrink with exit 6 and wrote nothing.
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), plugin = MOE_CRASHES_WHEN_WIDE;
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + plugin + " --case " +
                               bundled_case("gemm2_medium.h5") + " -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "before: T 67, K 4, E 16, H 96, I 48,"));
    // Tokens, slots, experts and intermediate features down to one; the hidden features to 65,
    // the fewest that still crash (the experts went first, so the width is what crashes).
    CHECK(has(r.output, "after:  T 1, K 1, E 1, H 65, I 1,"));
    CHECK(has(r.output, "still:  ERROR: the backend run crashed its worker process: SIGSEGV, a segmentation fault: "
                        "an invalid memory access\n"));
    CHECK_FALSE(has(r.output, "stopped early"));
    const moe::Dims d = dims_of(out);
    CHECK(d.T == 1);
    CHECK(d.E == 1);
    CHECK(d.H == 65);
    CHECK(d.I == 1);
    CHECK(has(moe::golden::read_golden(out).description, "Shrunk from case gemm2_medium for backend crashes_when_wide ("));
    const std::string repro = line_after(r.output, "repro: " + moe_conform() + " ");
    REQUIRE(repro == "run --backend-lib " + plugin + " --backend crashes_when_wide --case " + out);
    const auto again = run_command(moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    CHECK(has(again.output, "running the backend on this case crashed: the worker process was killed by signal 11 (SIGSEGV"));
    CHECK(has(again.output, "0 passed, 0 failed, 0 skipped, 1 errors"));
}

TEST_CASE("shrink: a plugin that hangs on a case shrinks it to a smaller case that hangs; the repro line carries the limit") {
    // The plugin deadlocks on every one-token case. Each run that still hangs takes the whole
    // --candidate-seconds, so --max-seconds ends the search after a few edits; the total stays
    // bounded (the case as given, the search, the last run, two reruns: about 3 + 4 x 1 s).
    TempDir dir;
    const std::string out = (dir / "small.h5").string(), plugin = MOE_HANGS_WHEN_SMALL;
    const std::string original = bundled_case("gemm3_single_token.h5");
    const auto r = run_command("timeout 60 " + moe_conform() + " shrink --quiet --candidate-seconds 1 --max-seconds 3 "
                               "--backend-lib " + plugin + " --case " + original + " -o " + out);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(has(r.output, "still:  ERROR: the backend run hangs: it had not returned after 1 s, and its worker process was "
                        "killed\n"));
    const moe::Dims before = dims_of(original), after = dims_of(out);
    CHECK(after.T == 1);
    CHECK(after.K * after.E * after.H * after.I < before.K * before.E * before.H * before.I);
    // run's own limit (600 s) would wait ten minutes for the hang: the repro line sets shrink's.
    const std::string repro = line_after(r.output, "repro: " + moe_conform() + " ");
    REQUIRE(repro == "run --backend-lib " + plugin + " --backend bad_plugin --case " + out + " --case-timeout 1");
    const auto again = run_command("timeout 60 " + moe_conform() + " " + repro + " --quiet");
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
    CHECK(has(again.output, "running the backend on this case timed out after 1 s (--case-timeout)"));
}

TEST_CASE("shrink: candidates that crash or hang where the case fails are not that failure: the search goes on past them") {
    // Both plugins fail every case (all zeros), one crashes and one deadlocks on a single token:
    // the one-token candidates are refused (another failure), and the shrunk case has two tokens
    // and fails as the original did. Before, the first one-token candidate ended the shrink
    // (exit 6, exit 5).
    TempDir dir;
    for (const std::string plugin : {MOE_CRASHES_WHEN_SMALL, MOE_HANGS_WHEN_SMALL}) {
        CAPTURE(plugin);
        const std::string out = (dir / "small.h5").string();
        const auto r = run_command("timeout 60 " + moe_conform() + " shrink --quiet --candidate-seconds 1 --backend-lib " +
                                   plugin + " --case " + bundled_case("gemm2_medium.h5") + " -o " + out);
        CAPTURE(r.output);
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "after:  T 2,"));
        CHECK(has(r.output, "still:  FAIL: "));
        const auto again = run_command(moe_conform() + " " + line_after(r.output, "repro: " + moe_conform() + " ") + " --quiet");
        CAPTURE(again.output);
        CHECK(again.exit_code == 1);
        CHECK(has(again.output, "0 passed, 1 failed"));
    }
}

TEST_CASE("shrink: killed mid-search, it leaves the smallest failing case found so far, and no worker behind") {
    // Each accepted edit is written at once. With every run of this case hanging for 1 s, the
    // search has accepted two edits when it is killed at 3.5 s.
    TempDir dir;
    const std::string out = (dir / "small.h5").string();
    const auto r = run_command("timeout -s KILL 3.5 " + moe_conform() + " shrink --quiet --candidate-seconds 1 --backend-lib " +
                               std::string(MOE_HANGS_WHEN_SMALL) + " --case " + bundled_case("gemm3_single_token.h5") +
                               " -o " + out);
    CAPTURE(r.output);
    CHECK(r.exit_code != 0);
    REQUIRE(fs::exists(out));
    const auto c = moe::golden::read_golden(out);
    CHECK(c.problem.name == "gemm3_single_token_shrunk");
    CHECK(has(c.description, "the search had not finished"));
    // The worker was killed with the shrink (it would deadlock forever): none is left running it.
    // ([-]o: the pattern does not match the shell that runs pgrep.)
    const auto left = run_command("for i in $(seq 20); do pgrep -f -- '[-]o " + out +
                                  "' > /dev/null || exit 0; sleep 0.1; done; exit 1");
    CAPTURE(left.output);
    CHECK(left.exit_code == 0);
}

TEST_CASE("shrink: a backend that does not fail the shrunk case the same way every time exits 4, the file kept") {
    // The plugin fails a case on its first run and errs on a rerun of the same inputs: the search
    // shrinks as usual, and the two reruns of the shrunk case differ. Exit 0 read as success.
    TempDir dir;
    const std::string out = (dir / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend-lib " + std::string(MOE_FLAKY_ON_REPEAT) +
                               " --case " + bundled_case("gemm2_medium.h5") + " -o " + out);
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
        const auto r = run_command(moe_conform() + " shrink --backend loop_f32 --case " + bundled_case(wrong));
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK(has(r.output, "--case " + bundled_case(wrong) + ": no case " + wrong + " in the suite " + kBundledSuite +
                                " (its MANIFEST.sha256 lists "));
        CHECK(has(r.output, "did you mean " + bundled_case("gemm2_medium.h5") + "?"));
    }
    const auto far =
        run_command(moe_conform() + " shrink --backend loop_f32 --case " + bundled_case("qwen_everything.h5"));
    CHECK(far.exit_code == 2);
    CHECK(has(far.output, "no case qwen_everything.h5 in the suite " + kBundledSuite));
    CHECK_FALSE(has(far.output, "did you mean"));
    const auto nowhere = run_command(moe_conform() + " shrink --backend loop_f32 --case " + (dir / "x.h5").string());
    CHECK(nowhere.exit_code == 2);
    CHECK(has(nowhere.output, "--case " + (dir / "x.h5").string() + ": no such file"));
    // A file its folder's manifest lists with another digest is refused, as run refuses it
    // (--no-manifest skips the check).
    fs::create_directories(dir / "suite");
    fs::copy_file(kBundledSuite + "/MANIFEST.sha256", dir / "suite" / "MANIFEST.sha256");
    moe::golden::GoldenCase c = moe::golden::read_golden(bundled_case("gemm3_single_token.h5"));
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
