// moe-conform run --case and check --case, checked as shrink --case is (moe::shrink::check_case_exists,
// conform_cli::cases_exist): a missing file in a suite folder is named with the suite and the
// closest case, one elsewhere is "no such file", a folder is refused, each exit 2 before anything
// runs; a file its folder's manifest lists must match its digest (--no-manifest skips that).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "moe/golden/golden_file.hpp"
#include "bundled_suite.hpp"
#include "cli_expect.hpp"
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

// The commands that take --case, each with what else it needs: run a backend, check a result.
struct Command {
    std::string name, head, tail;
};
std::vector<Command> case_commands() {
    return {{"run", moe_conform() + " run --quiet --backend loop_f32", ""},
            {"check", moe_conform() + " check --quiet", " --results " + bundled_case("topk_one.h5")},
            {"shrink", moe_conform() + " shrink --quiet --backend mutant:hidden_off_by_one", ""}};
}

// Exit 2 naming `message`, before any case ran (no report's count line), not in CLI11's words.
void refused(const std::string& command, const std::string& message) {
    CHECK_FALSE(has(moe::test::expect_refused_before_running(command, message), "File does not exist"));
}

}  // namespace

TEST_CASE("run, check and shrink --case: a name not in the suite gets the suite and the closest case, as shrink's") {
    for (const auto& c : case_commands()) {
        CAPTURE(c.name);
        for (const std::string wrong : {"gemm2_mediun.h5", "gemm2_medium"})
            refused(c.head + " --case " + bundled_case(wrong) + c.tail,
                    "moe-conform: error: --case " + bundled_case(wrong) + ": no case " + wrong + " in the suite " +
                        kBundledSuite + " (its MANIFEST.sha256 lists ");
        refused(c.head + " --case " + bundled_case("gemm2_mediun.h5") + c.tail,
                "; did you mean " + bundled_case("gemm2_medium.h5") + "?");
        // Nothing close: the suite is named, no guess.
        const auto far = run_command(c.head + " --case " + bundled_case("qwen_everything.h5") + c.tail);
        CHECK(far.exit_code == 2);
        CHECK(has(far.output, "no case qwen_everything.h5 in the suite " + kBundledSuite));
        CHECK_FALSE(has(far.output, "did you mean"));
    }
}

TEST_CASE("run, check and shrink --case: a missing file outside a suite is 'no such file'; a folder is refused; each one named") {
    TempDir dir;
    const std::string missing = (dir / "x.h5").string();
    for (const auto& c : case_commands()) {
        CAPTURE(c.name);
        refused(c.head + " --case " + missing + c.tail, "moe-conform: error: --case " + missing + ": no such file");
        refused(c.head + " --case " + dir.path().string() + c.tail,
                "moe-conform: error: --case " + dir.path().string() + ": a folder, not a golden file");
    }
    // Several --case files: every missing one is named, not only the first.
    const auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("gemm2_mediun.h5") +
                               " --case " + bundled_case("topk_one.h5") + " --case " + missing);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "did you mean " + bundled_case("gemm2_medium.h5") + "?"));
    CHECK(has(r.output, "--case " + missing + ": no such file"));
    CHECK_FALSE(has(r.output, "passed"));
}

TEST_CASE("run and check --case: a listed file whose bytes changed is refused, --no-manifest runs it; an unlisted one runs") {
    TempDir dir;
    fs::create_directories(dir / "suite");
    fs::copy_file(kBundledSuite + "/MANIFEST.sha256", dir / "suite" / "MANIFEST.sha256");
    moe::golden::GoldenCase c = moe::golden::read_golden(bundled_case("gemm3_single_token.h5"));
    c.description += " (changed)";
    const std::string changed = (dir / "suite" / "gemm3_single_token.h5").string();
    moe::golden::write_golden(changed, c);
    const std::string run = moe_conform() + " run --quiet --backend loop_f32";
    refused(run + " --case " + changed, "gemm3_single_token.h5: SHA-256 differs from");
    refused(moe_conform() + " check --quiet --case " + changed + " --results " + bundled_case("topk_one.h5"),
            "gemm3_single_token.h5: SHA-256 differs from");
    const auto skipped = run_command(run + " --no-manifest --case " + changed);
    CAPTURE(skipped.output);
    CHECK(skipped.exit_code == 0);
    CHECK(has(skipped.output, "1 passed, 0 failed"));
    // A file the manifest does not list is the user's own (a shrunk case written there, whose
    // repro line runs it): run as given (spec/golden-format.md, "Manifest"), as shrink takes it.
    const std::string own = (dir / "suite" / "my_case.h5").string();
    fs::copy_file(bundled_case("gemm3_single_token.h5"), own);
    const auto unlisted = run_command(run + " --case " + own);
    CAPTURE(unlisted.output);
    CHECK(unlisted.exit_code == 0);
    CHECK(has(unlisted.output, "1 passed, 0 failed"));
}

TEST_CASE("run --help's example gives --expect a JSON file, which is what --expect reads") {
    // It read "--expect known_failures.txt" (test_moe_conform_cli.cpp, past 500 lines, checks the
    // rest of every command's --help).
    const auto r = run_command(moe_conform() + " run --help");
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "--expect known_failures.json"));
    CHECK_FALSE(has(r.output, "known_failures.txt"));
}
