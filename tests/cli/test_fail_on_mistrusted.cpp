// --fail-on-mistrusted (run, check, run_suite's fail_on_mistrusted=): a MISTRUSTED result, a pass
// whose bound cannot tell a right answer from a wrong one (spec/tolerance.md), exits 0 by default,
// so a CI that must not accept what the suite cannot judge had nothing to gate on. With the flag
// it exits 1, as a FAIL does, and the text, JSON and JUnit reports say why; without it nothing
// changes. The case: reference_dense on an all-NaN dense reading, MISTRUSTED in the bundled suite.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "bundled_suite.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::moe_conform;
using moe::test::run_command;
using moe::test::TempDir;
using moe::test::bundled_case;
using moe::test::has;
namespace fs = std::filesystem;

namespace {

const std::string kMistrustedCase = bundled_case("nonfinite_gate_lane_nan_f32.h5");
const std::string kRunMistrusted = moe_conform() + " run --quiet --backend reference_dense --case " + kMistrustedCase;
const std::string kCountLine = "0 passed, 0 failed, 0 skipped, 1 mistrusted";
const std::string kWhy = "MISTRUSTED fails the run (--fail-on-mistrusted)";

std::string last_line(const std::string& s) {
    const auto end = s.find_last_not_of('\n');
    const auto start = s.rfind('\n', end);
    const auto from = start == std::string::npos ? 0 : start + 1;
    return s.substr(from, end - from + 1);
}

std::string file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The JSON and JUnit files agree with each other and the schema (spec/report-format.md), read
// without moe-conform's code.
void check_report_files(const fs::path& json, const fs::path& junit) {
    const auto r = run_command("/usr/bin/python3 " MOE_SOURCE_DIR "/tests/python/check_report_files.py " +
                               json.string() + " " + junit.string() + " " MOE_SOURCE_DIR "/spec/report.schema.json");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
}

}  // namespace

TEST_CASE("run: without --fail-on-mistrusted a MISTRUSTED case exits 0 and the reports are as before") {
    TempDir dir;
    const fs::path json = dir.path() / "r.json", junit = dir.path() / "r.xml";
    const auto r = run_command(kRunMistrusted + " --json " + json.string() + " --junit " + junit.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.output) == kCountLine);
    CHECK_FALSE(has(r.output, "fail-on-mistrusted"));
    CHECK_FALSE(has(file_text(json), "fail_on_mistrusted"));
    CHECK(has(file_text(junit), "<skipped message=\"MISTRUSTED: the output passes"));
    CHECK_FALSE(has(file_text(junit), "<failure"));
    check_report_files(json, junit);
}

TEST_CASE("run --fail-on-mistrusted: a MISTRUSTED case exits 1 and the text, JSON and JUnit say why") {
    TempDir dir;
    const fs::path json = dir.path() / "r.json", junit = dir.path() / "r.xml";
    const auto r = run_command(kRunMistrusted + " --fail-on-mistrusted --json " + json.string() + " --junit " +
                               junit.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    // The count line stays last, its counts unchanged; the words after them give the reason.
    CHECK(last_line(r.output) == kCountLine + "; " + kWhy);
    // A failure of this run: its details and a repro line that exits as this run did.
    CHECK(has(r.output, "\nDetails\n\nMISTRUSTED reference_dense nonfinite_gate_lane_nan_f32"));
    CHECK(has(r.output, "repro: " + moe_conform() + " run --fail-on-mistrusted --backend reference_dense --case " +
                            kMistrustedCase));
    CHECK(has(file_text(json), "\"fail_on_mistrusted\": true"));
    const std::string xml = file_text(junit);
    CHECK(has(xml, "failures=\"1\" errors=\"0\" skipped=\"0\""));
    CHECK(has(xml, "<failure message=\"" + kWhy + ": the output passes, but 96 of 96"));
    CHECK(has(xml, "type=\"MISTRUSTED\""));
    CHECK_FALSE(has(xml, "<skipped"));
    check_report_files(json, junit);
}

TEST_CASE("run --fail-on-mistrusted on PASS results alone exits 0 with the usual count line") {
    const auto r = run_command(moe_conform() + " run --quiet --fail-on-mistrusted --backend loop_f32 --case " +
                               bundled_case("topk_one.h5"));
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.output) == "1 passed, 0 failed, 0 skipped");
}

TEST_CASE("check --fail-on-mistrusted gates result files as run gates a backend") {
    TempDir dir;
    const fs::path results = dir.path() / "results";
    REQUIRE(run_command(kRunMistrusted + " --write-results " + results.string()).exit_code == 0);
    const std::string check =
        moe_conform() + " check --quiet --case " + kMistrustedCase + " --results " + results.string();
    const auto plain = run_command(check);
    CAPTURE(plain.output);
    CHECK(plain.exit_code == 0);
    CHECK(last_line(plain.output) == kCountLine);

    const fs::path json = dir.path() / "c.json", junit = dir.path() / "c.xml";
    const auto gated = run_command(check + " --fail-on-mistrusted --json " + json.string() + " --junit " + junit.string());
    CAPTURE(gated.output);
    CHECK(gated.exit_code == 1);
    CHECK(last_line(gated.output) == kCountLine + "; " + kWhy);
    CHECK(has(gated.output, " --fail-on-mistrusted\n"));  // on the repro line
    check_report_files(json, junit);

    // A passing result under the flag: exit 0.
    const fs::path passing = dir.path() / "passing";
    REQUIRE(run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("topk_one.h5") +
                        " --write-results " + passing.string())
                .exit_code == 0);
    const auto pass = run_command(moe_conform() + " check --quiet --fail-on-mistrusted --case " +
                                  bundled_case("topk_one.h5") + " --results " + passing.string());
    CAPTURE(pass.output);
    CHECK(pass.exit_code == 0);
}

TEST_CASE("moe_conform.run_suite(fail_on_mistrusted=True): exit_code 1 on a MISTRUSTED, 0 by default") {
    // An all-NaN output where the reference is NaN everywhere: MISTRUSTED, as reference_dense's.
    const std::string script =
        "import sys, numpy as np, moe_conform\n"
        "nan = lambda c: np.full(c.inputs['hidden_states'].shape, np.nan, c.inputs['hidden_states'].dtype)\n"
        "for gate in (False, True):\n"
        "    s = moe_conform.run_suite(nan, sys.argv[1], compute='f64', quiet=True, fail_on_mistrusted=gate)\n"
        "    print(gate, s.exit_code, s.report_text.splitlines()[-1])\n";
    std::string quoted = "'";
    for (char c : script) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    const auto r = run_command("PYTHONPATH=" MOE_BINARY_DIR "/python /usr/bin/python3 -c " + quoted + "' " +
                               kMistrustedCase);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "False 0 " + kCountLine + "\n"));
    CHECK(has(r.output, "True 1 " + kCountLine + "; " + kWhy + "\n"));
}

TEST_CASE("run --help and check --help teach --fail-on-mistrusted and its exit code") {
    for (const std::string command : {"run", "check"}) {
        CAPTURE(command);
        const auto r = run_command(moe_conform() + " " + command + " --help");
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "--fail-on-mistrusted"));
        CHECK(has(r.output, "(or a MISTRUSTED, with --fail-on-mistrusted)"));
    }
}
