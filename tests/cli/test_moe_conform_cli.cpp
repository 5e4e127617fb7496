// moe-conform end to end: verdicts, exit codes, reports, repro lines, bad files.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <unistd.h>

#include "bundled_suite.hpp"
#include "cli_expect.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using moe::test::moe_conform;
using moe::test::expect_refused_before_running;
using moe::test::run_command;
using moe::test::run_python;
namespace fs = std::filesystem;
using moe::test::TempDir;
using moe::test::kBundledSuite;
using moe::test::bundled_case;
using moe::test::has;

namespace {

std::string last_line(const std::string& s) {
    auto end = s.find_last_not_of('\n');
    auto start = s.rfind('\n', end);
    return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path copy_case(const TempDir& dir, const std::string& name) {
    const fs::path to = dir.path() / (name + ".h5");
    fs::copy_file(bundled_case(name + ".h5"), to, fs::copy_options::overwrite_existing);
    return to;
}

}  // namespace

TEST_CASE("the bundled suite passes on the built-in backends; JSON and JUnit agree and validate") {
    TempDir dir;
    const auto json = (dir.path() / "r.json").string(), xml = (dir.path() / "r.xml").string();
    const auto r = run_command(moe_conform() + " run --quiet --backend reference,loop_f32 --suite " + kBundledSuite +
                               " --json " + json + " --junit " + xml);
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    std::size_t files = 0;  // two backends, every bundled file
    for (const auto& e : fs::directory_iterator(kBundledSuite)) files += e.path().extension() == ".h5";
    const std::string total = std::to_string(2 * files);
    CHECK(last_line(r.output) == total + " passed, 0 failed, 0 skipped");
    const auto check = run_command("/usr/bin/python3 " MOE_SOURCE_DIR "/tests/python/check_report_files.py " + json +
                                   " " + xml + " " MOE_SOURCE_DIR "/spec/report.schema.json --expect-total " + total);
    CAPTURE(check.output);
    CHECK(check.exit_code == 0);
}

TEST_CASE("a wrong output fails with the worst element, the first divergent stage and a repro line") {
    TempDir dir;
    const fs::path f = copy_case(dir, "gemm2_gptoss_openvino_f32");
    // Change one reference value by far more than its bound (h5py recomputes the checksum).
    REQUIRE(run_python("import h5py\nf = h5py.File('" + f.string() + "', 'r+')\nf['outputs/output'][2, 5] += 1.0\n")
                .exit_code == 0);
    // --trust-stored-results: the edited output stands in for a wrong backend (by default the
    // runner refuses a file whose output disagrees with a recomputation from its inputs).
    const auto r = run_command(moe_conform() + " run --quiet --trust-stored-results --backend loop_f32 --case " + f.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "FAIL"));
    CHECK(has(r.output, "1 of 224 elements outside their bound"));
    CHECK(has(r.output, "repro: " + moe_conform() + " run --backend loop_f32 --case " + f.string()));
    CHECK(last_line(r.output) == "0 passed, 1 failed, 0 skipped");
    // The repro line reruns exactly that case.
    const auto again = run_command(moe_conform() + " run --quiet --trust-stored-results --backend loop_f32 --case " + f.string());
    CHECK(again.exit_code == 1);

    // A stage of the reference changed: the report names it as the first divergent stage.
    const fs::path g = copy_case(dir, "gemm3_qwen_openvino_f32");
    REQUIRE(run_python("import h5py\nf = h5py.File('" + g.string() + "', 'r+')\nf['outputs/output'][0, 0] += 1.0\n"
                       "f['stages/up'][0, 0, 3] += 1.0\n")
                .exit_code == 0);
    const auto s = run_command(moe_conform() + " run --quiet --trust-stored-results --backend loop_f32 --case " + g.string());
    CAPTURE(s.output);
    CHECK(s.exit_code == 1);
    CHECK(has(s.output, "up"));
    CHECK(has(s.output, "stage"));
}

TEST_CASE("two files of one run with the same case name: exit 2 naming both, not two results under one name") {
    TempDir dir;
    const fs::path copy = dir / "again.h5";
    fs::copy_file(bundled_case("topk_one.h5"), copy);
    const std::string junit = (dir / "r.xml").string();
    const auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("topk_one.h5") +
                               " --case " + copy.string() + " --case " + bundled_case("gemm2_bias_en.h5") +
                               " --junit " + junit);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "case name 'topk_one' is in two files of this run: '" + bundled_case("topk_one.h5") +
                            "' and '" + copy.string() + "'"));
    // The same in worker processes and in one process.
    const auto one = run_command(moe_conform() + " run --quiet --no-isolation --backend loop_f32 --case " +
                                 bundled_case("topk_one.h5") + " --case " + copy.string());
    CHECK(one.exit_code == 2);
    CHECK(has(one.output, "case name 'topk_one' is in two files"));
}

TEST_CASE("a corrupted file is reported as corrupt, exit 2, never compared") {
    TempDir dir;
    const fs::path f = copy_case(dir, "gemm3_qwen_openvino_f32");
    REQUIRE(run_python("import h5py\ni = h5py.File('" + f.string() + "', 'r')['inputs/weight_1'].id.get_chunk_info(0)\n"
                       "b = open('" + f.string() + "', 'r+b')\nb.seek(i.byte_offset + i.size // 2)\nc = b.read(1)\n"
                       "b.seek(i.byte_offset + i.size // 2)\nb.write(bytes([c[0] ^ 0xff]))\n")
                .exit_code == 0);
    const auto r = run_command(moe_conform() + " run --quiet --backend reference --case " + f.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "checksum"));
    CHECK(has(r.output, "/inputs/weight_1"));
    CHECK(has(r.output, f.string()));
    CHECK(has(r.output, "0 passed, 0 failed, 0 skipped"));  // nothing was compared
}

TEST_CASE("a missing dataset is named, exit 2") {
    TempDir dir;
    const fs::path f = copy_case(dir, "gemm2_nobias_spec");
    REQUIRE(run_python("import h5py\nf = h5py.File('" + f.string() + "', 'r+')\ndel f['inputs/weight_1']\n").exit_code == 0);
    auto r = run_command(moe_conform() + " run --quiet --backend reference --case " + f.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "weight_1"));
    CHECK(has(r.output, f.string()));

    const fs::path g = copy_case(dir, "gemm2_nobias_openvino");
    REQUIRE(run_python("import h5py\nf = h5py.File('" + g.string() + "', 'r+')\ndel f['outputs/output']\n").exit_code == 0);
    r = run_command(moe_conform() + " run --quiet --backend reference --case " + g.string());
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "/outputs/output"));
}

TEST_CASE("expectations: XPASS fails the run, SKIP is reported with its reason, all skipped exits 77") {
    TempDir dir;
    const fs::path e = dir.path() / "expect.json";
    std::ofstream(e) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
        {"backend": "loop_f32", "case": "topk_one", "status": "FAIL", "reason": "stale entry", "ticket": "#1"},
        {"backend": "loop_*", "case": "gemm3_*", "status": "SKIP", "reason": "not this week"}]})";
    const fs::path html = dir.path() / "r.html";
    auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                         " --filter topk_one --filter 'gemm3_qwen_spec_*' --expect " + e.string() + " --html " +
                         html.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    // The ticket is in every report: the HTML page's table row and failure section too.
    std::ifstream page(html);
    const std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
    CHECK(has(text, "stale entry) but passes: update the expectation file [#1]"));
    CHECK(has(text, "ticket: #1"));
    CHECK(has(r.output, "XPASS"));
    CHECK(has(r.output, "update the expectation file"));
    CHECK(has(r.output, "not this week"));
    CHECK(last_line(r.output) == "0 passed, 0 failed, 4 skipped, 1 xpass");
    // An XPASS is one against the expectation file only: the repro line names it.
    CHECK(has(r.output, "repro: " + moe_conform() + " run --expect " + e.string() + " --backend loop_f32 --case " +
                            bundled_case("topk_one.h5")));
    CHECK_FALSE(has(r.output, "applied to no result"));  // both entries applied

    // An entry that applies to nothing in the run is said (a stale entry sat there unnoticed).
    r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                    " --filter 'gemm3_qwen_spec_*' --expect " + e.string());
    CHECK(r.exit_code == 77);
    CHECK(has(r.output, "note: 1 of the 2 entries of " + e.string() + " applied to no result of this run"));
    CHECK(has(r.output, "  entry 0: backend \"loop_f32\", case \"topk_one\"\n"));
    CHECK_FALSE(has(r.output, "  entry 1:"));

    // A listed case that now passes as MISTRUSTED (reference_dense on an all-NaN dense reading) is
    // XPASS too: it was MISTRUSTED, exit 0, and the stale entry went unseen.
    std::ofstream(e) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
        {"backend": "reference_dense", "case": "nonfinite_gate_lane_nan_f32", "status": "FAIL", "reason": "was wrong"}]})";
    const std::string nan_case = " --backend reference_dense --case " + bundled_case("nonfinite_gate_lane_nan_f32.h5");
    r = run_command(moe_conform() + " run --quiet" + nan_case);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.output) == "0 passed, 0 failed, 0 skipped, 1 mistrusted");
    r = run_command(moe_conform() + " run --quiet" + nan_case + " --expect " + e.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r.output, "listed as failing (was wrong) but passes, as MISTRUSTED (the output passes, but 96 of 96"));
    CHECK(last_line(r.output) == "0 passed, 0 failed, 0 skipped, 1 xpass");

    std::ofstream(e) << R"({"format": "moe-expectations", "format_version": 1, "expectations": [
        {"backend": "loop_f32", "case": "x", "status": "FAIL"}]})";
    r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite + " --expect " + e.string());
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "entry 0"));
}

TEST_CASE("--shard divides the cases --filter and --tier select; a shard left with none exits 77") {
    std::size_t total = 0;
    for (int i = 1; i <= 3; ++i) {
        const auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                                   " --filter 'gemm2_*' --shard " + std::to_string(i) + "/3");
        CAPTURE(r.output);
        CHECK(r.exit_code == 0);
        const auto line = last_line(r.output);
        const std::size_t n = std::stoul(line.substr(0, line.find(' ')));
        CHECK(n > 0);  // cut before the filter, shares of the 170 files held 0 to 3 gemm2 cases
        total += n;
    }
    const auto all = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite + " --filter 'gemm2_*'");
    CHECK(std::to_string(total) + " passed, 0 failed, 0 skipped" == last_line(all.output));
    const auto empty = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                                   " --filter topk_one --shard 2/3");
    CHECK(empty.exit_code == 77);
    CHECK(has(empty.output, "shard 2/3 holds none of the 1 selected case(s)"));
    // Its report files are written, with no result: a CI collecting one per shard finds each.
    TempDir dir;
    const fs::path json = dir.path() / "r.json", junit = dir.path() / "r.xml";
    const auto reported = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                                      " --filter topk_one --shard 2/3 --json " + json.string() + " --junit " +
                                      junit.string());
    CHECK(reported.exit_code == 77);
    CHECK(has(file_bytes(json.string()), "\"results\": []"));
    CHECK(has(file_bytes(junit.string()), "tests=\"0\""));
    const auto no_work = run_command(moe_conform() + " selftest --shard 1000/1000");
    CHECK(no_work.exit_code == 77);
    CHECK(has(no_work.output, "selftest shard 1000/1000 holds none of the"));
    // A file the tier leaves out is not read at all: its size cannot fail the run.
    const auto quick = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                                   " --tier quick --max-memory 300k");
    CAPTURE(quick.output);
    CHECK(quick.exit_code == 0);
}

TEST_CASE("expectation files: a key given twice, an entry that can never apply, a blank reason are refused") {
    // Each was accepted with nothing said: the last "status" won (a known failure turned SKIP), a
    // second "expectations" dropped every entry, an entry after one covering it never applied.
    TempDir dir;
    const fs::path e = dir.path() / "expect.json";
    const std::string head = R"({"format": "moe-expectations", "format_version": 1, )";
    const std::string fail = R"({"backend": "loop_f32", "case": "topk_one", "status": "FAIL", "reason": "r"})";
    const std::pair<std::string, std::string> refused[] = {
        {head + R"("expectations": [)" + fail + R"(, {"backend": "b", "case": "c", "status": "FAIL", "reason": "r", "status": "SKIP"}]})",
         "entry 1: key \"status\" given twice"},
        {head + R"("expectations": [)" + fail + R"(], "expectations": []})", "expect.json: key \"expectations\" given twice"},
        {head + R"("expectations": [)" + fail + R"(, {"backend": "loop_f32", "case": "topk_one", "status": "SKIP", "reason": "r"}]})",
         "entry 1 (backend \"loop_f32\", case \"topk_one\") can never apply: entry 0"},
        {head + R"("expectations": [{"backend": "*", "case": "topk_*", "status": "SKIP", "reason": "r"}, )" + fail + "]}",
         "entry 1 (backend \"loop_f32\", case \"topk_one\") can never apply: entry 0 (backend \"*\", case \"topk_*\")"},
        {head + R"("expectations": [{"backend": "loop_f32", "case": "topk_one", "status": "FAIL", "reason": " "}]})",
         "entry 0: an expectation needs a reason"},
        {head + R"("description": 5, "expectations": []})", "\"description\" must be a string, not a number"},
    };
    for (const auto& [text, message] : refused) {
        std::ofstream(e) << text;
        expect_refused_before_running(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                                          " --filter topk_one --expect " + e.string(),
                                      message);
    }
    // An exception before its rule applies; '?' does not cover '*' (topk_? does not hide topk_*).
    std::ofstream(e) << head + R"("expectations": [)" + fail +
                            R"(, {"backend": "*", "case": "topk_?", "status": "SKIP", "reason": "r"},
                               {"backend": "*", "case": "topk_*", "status": "FAIL", "reason": "r"}]})";
    const auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite +
                               " --filter topk_one --expect " + e.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(last_line(r.output) == "0 passed, 0 failed, 0 skipped, 1 xpass");
}

TEST_CASE("--shard: N near 2^64 does not wrap; one case name in two files is refused before the cut") {
    // i += N wrapped past 2^64: shard 5 of 2^64 - 1 held the first five files, overlapping 1 to 4.
    const std::string run = moe_conform() + " run --quiet --backend loop_f32 --suite " + kBundledSuite + " --filter 'gemm2_*'";
    auto r = run_command(run + " --shard 5/18446744073709551615");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.output) == "1 passed, 0 failed, 0 skipped");
    CHECK(run_command(run + " --shard 100/18446744073709551615").exit_code == 77);
    // Unsharded, a run meeting both files is exit 2; each shard met one and passed.
    TempDir dir;
    copy_case(dir, "topk_one");
    fs::copy_file(bundled_case("topk_one.h5"), dir.path() / "topk_one_again.h5");
    for (const char* shard : {"1/2", "2/2"})
        expect_refused_before_running(moe_conform() + " run --quiet --backend loop_f32 --suite " + dir.path().string() +
                                          " --shard " + shard,
                                      "case name 'topk_one' is in two files of the selection");
}

TEST_CASE("files that hung or crashed HDF5, in a suite run with --filter and checked against results: exit 2 or an ERROR") {
    // --filter reads each file's case attribute before the workers run, and check identifies
    // every golden file: both outside the workers, both guarded (global heap check, a child
    // process with a time limit for the selection).
    TempDir dir;
    const fs::path suite = dir.path() / "suite", results = dir.path() / "results";
    fs::create_directories(suite);
    REQUIRE(run_command(moe_conform() + " run --quiet --backend loop_f32 --case " + bundled_case("topk_one.h5") +
                        " --write-results " + results.string()).exit_code == 0);
    for (const auto& e : fs::directory_iterator(std::string(MOE_SOURCE_DIR) + "/tests/golden/fuzz-regressions")) {
        if (e.path().extension() != ".h5") continue;
        CAPTURE(e.path().filename().string());
        for (const auto& f : fs::directory_iterator(suite)) fs::remove(f.path());
        fs::copy_file(bundled_case("topk_one.h5"), suite / "topk_one.h5");
        fs::copy_file(e.path(), suite / e.path().filename());
        const auto run = run_command(moe_conform() + " run --quiet --no-manifest --backend loop_f32 --filter '*' --suite " +
                                     suite.string());
        CAPTURE(run.output);
        CHECK((run.exit_code == 1 || run.exit_code == 2));
        CHECK((has(run.output, "golden file") || has(run.output, "ERROR")));
        const auto check = run_command(moe_conform() + " check --quiet --no-manifest --suite " + suite.string() +
                                       " --results " + results.string());
        CAPTURE(check.output);
        CHECK(check.exit_code == 2);
        CHECK(has(check.output, "problem(s) with the golden or result files"));
    }
}

TEST_CASE("check --results on the folder of a two-backend --write-results refuses its two answers to a case") {
    // Subfolders are searched (a CI's shard artifacts): the per-backend folders answer each case twice.
    TempDir dir;
    const fs::path results = dir.path() / "results";
    REQUIRE(run_command(moe_conform() + " run --quiet --backend loop_f32,reference --case " +
                        bundled_case("topk_one.h5") + " --write-results " + results.string()).exit_code == 0);
    const auto r = run_command(moe_conform() + " check --quiet --case " + bundled_case("topk_one.h5") + " --results " +
                               results.string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, (results / "reference" / "topk_one.h5").string() + ": case 'topk_one' already has a result, " +
                            (results / "loop_f32" / "topk_one.h5").string() +
                            " (subfolders of a results folder are searched too: give --results the folder of one "
                            "implementation)"));
    const auto one = run_command(moe_conform() + " check --quiet --case " + bundled_case("topk_one.h5") +
                                 " --results " + (results / "loop_f32").string());
    CAPTURE(one.output);
    CHECK(one.exit_code == 0);
}

TEST_CASE("a suite's manifest is read as sha256sum -c reads it: CRLF, upper-case hex, binary mode") {
    TempDir dir;
    fs::copy_file(bundled_case("topk_one.h5"), dir.path() / "topk_one.h5");
    fs::copy_file(bundled_case("topk_equals_experts.h5"), dir.path() / "topk_equals_experts.h5");
    std::string sums;
    {
        std::ifstream in(kBundledSuite + "/MANIFEST.sha256");
        for (std::string line; std::getline(in, line);)
            if (has(line, "  topk_one.h5") || has(line, "  topk_equals_experts.h5")) sums += line + "\n";
    }
    REQUIRE(sums.size() == 2 * (64 + 2 + 1) + std::string("topk_one.h5topk_equals_experts.h5").size());
    // Windows line ends, the first sum in upper case, the second in binary mode ("<sum> *<file>").
    std::string edited;
    std::istringstream lines(sums);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) {
        if (n == 0)
            for (std::size_t i = 0; i < 64; ++i) line[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(line[i])));
        else
            line[65] = '*';
        edited += line + "\r\n";
    }
    std::ofstream(dir.path() / "MANIFEST.sha256", std::ios::binary) << edited;
    auto r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + dir.path().string());
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.output) == "2 passed, 0 failed, 0 skipped");
    // A changed digit is still a mismatch, whatever the case of the others.
    edited[3] = edited[3] == '0' ? '1' : '0';
    std::ofstream(dir.path() / "MANIFEST.sha256", std::ios::binary) << edited;
    r = run_command(moe_conform() + " run --quiet --backend loop_f32 --suite " + dir.path().string());
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "topk_"));
}

TEST_CASE("usage errors exit 2 with a message") {
    auto r = run_command(moe_conform() + " frob");
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "unknown command 'frob' (commands: list, run, check, selftest, shrink"));
    r = run_command(moe_conform() + " run --backend nosuch --suite " + kBundledSuite);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "unknown backend 'nosuch' (built-in backends: reference, reference_dense, loop_f32, loop_lowp"));
    r = run_command(moe_conform() + " run --backend reference");
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "--suite"));
    TempDir dir;
    const std::string json = (dir.path() / "r.json").string();
    r = run_command(moe_conform() + " run --backend reference --suite " + kBundledSuite + " --filter 'no_such_case*' --json " +
                    json);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "no case matched"));
    CHECK(has(r.output, "no report file written"));
    CHECK(!fs::exists(json));  // an empty report would read as a clean run
    r = run_command(moe_conform() + " run --backend reference --suite " + kBundledSuite + " --shard ''");
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "expected I/N"));
    // A .h5 entry that is no file (a dangling link: an incomplete checkout) is not skipped.
    const fs::path short_suite = dir.path() / "short";
    fs::create_directories(short_suite);
    fs::copy_file(bundled_case("topk_one.h5"), short_suite / "topk_one.h5");
    fs::create_symlink(dir.path() / "nowhere.h5", short_suite / "missing.h5");
    r = run_command(moe_conform() + " run --backend reference --no-manifest --suite " + short_suite.string());
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "missing.h5 is a link to nothing"));
    fs::remove_all(short_suite);
    r = run_command(moe_conform() + " run --backend reference --suite " + dir.path().string());
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "holds no .h5 golden file"));
    r = run_command(moe_conform() + " list");
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "loop_lowp"));
}

TEST_CASE("selftest's repro lines run: a mutant by name, in worker processes, spelled either way") {
    // The names were checked by making the backends in the parent: an opencl mutant opened its
    // device there, and the forked workers hung on every case until --case-timeout.
    const auto r = run_command(moe_conform() + " run --backend mutant:opencl_wrong_offset --case " +
                               bundled_case("gemm2_gptoss_spec_bf16.h5") + " --case-timeout 60");
    CAPTURE(r.output);
    CHECK_FALSE(has(r.output, "timed out"));
    CHECK((r.exit_code == 1 || r.exit_code == 77));  // caught; 77 where no OpenCL device exists
    const auto twice = run_command(moe_conform() + " run --backend lanes_swapped,mutant:lanes_swapped --case " +
                                   bundled_case("topk_one.h5"));
    CHECK(twice.exit_code == 2);
    CHECK(has(twice.output, "named twice"));
    // Spelt bare, a mutant is still listed under the name its results carry; the recorded command
    // line is quoted as a shell reads it.
    TempDir dir;
    const std::string json = (dir.path() / "r.json").string();
    const auto bare = run_command(moe_conform() + " run --quiet --backend loop_f32,lanes_swapped --case " +
                                  bundled_case("topk_one.h5") + " --filter 'top*' --json " + json);
    CHECK(bare.exit_code == 1);
    const std::string report = file_bytes(json);
    CHECK(has(report, R"("backends": [)"));
    CHECK(has(report, R"("mutant:lanes_swapped")"));
    CHECK_FALSE(has(report, R"("lanes_swapped")"));
    CHECK(has(report, "--filter 'top*'"));
}

TEST_CASE("selftest --family runs only those families' correct backends and mutants; --device reaches the opencl mutants") {
    const auto r = run_command(moe_conform() + " selftest --quiet --family expert_parallel,blockwise");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    std::istringstream lines(r.output);
    std::size_t listed = 0, mutants = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("  ", 0) != 0 || line.rfind("   ", 0) == 0) continue;  // a backend's or a mutant's line
        CAPTURE(line);
        CHECK((line.rfind("  expert_parallel", 0) == 0 || line.rfind("  blockwise", 0) == 0));
        ++listed;
        if (has(line, " caught ")) ++mutants;
    }
    CHECK(listed == mutants + 2);  // the two correct backends
    CHECK(mutants >= 2);
    CHECK(has(r.output, "selftest: " + std::to_string(mutants) + " of " + std::to_string(mutants) + " mutants caught"));
    // The last opencl mutant alone (shard 5 of the backend and its four mutants), on PoCL's device
    // 0:0: its repro line names the device.
    TempDir dir;
    const std::string json = (dir.path() / "s.json").string();
    const auto one = run_command(moe_conform() + " selftest --quiet --family opencl --device 0:0 --shard 5/5 --json " + json);
    CAPTURE(one.output);
    CHECK(one.exit_code == 0);
    CHECK(has(file_bytes(json), R"("repro": ")" + moe_conform() + " run --device 0:0 --backend mutant:opencl_"));
    // A mutant of another family in the same selftest: its repro line has no --device (run refuses
    // --device where no opencl backend runs), and runs as printed. The items: the correct opencl
    // and expert_parallel backends, 4 opencl mutants, then expert_parallel's 2: the last one.
    const auto other = run_command(moe_conform() + " selftest --quiet --family opencl,expert_parallel --device 0:0 " +
                                   "--shard 8/8 --json " + json);
    CAPTURE(other.output);
    CHECK(other.exit_code == 0);
    const std::string report = file_bytes(json);
    const auto at = report.find(R"("repro": ")" + moe_conform() + " run --backend mutant:expert_parallel_");
    REQUIRE(at != std::string::npos);
    const auto begin = at + 10, end = report.find('"', begin);  // past "repro": "
    const auto again = run_command(report.substr(begin, end - begin));  // as pasted
    CAPTURE(again.output);
    CHECK(again.exit_code == 1);
}

TEST_CASE("flag values out of range exit 2 saying what is wanted, before anything runs") {
    const std::string run = moe_conform() + " run --backend reference --suite " + kBundledSuite;
    const std::pair<std::string, std::string> refused[] = {
        {run + " --threads 0", "--threads: 0: expected more than 0"},
        {run + " --case-timeout -1", "--case-timeout: -1: expected 0 or more"},
        {run + " --max-memory 0", "--max-memory: 0: expected more than 0"},
        {run + " --threads two", "--threads: two is not a number"},
        {moe_conform() + " selftest --threads 0", "--threads: 0: expected more than 0"},
        {moe_conform() + " selftest --family frob", "--family: frob not in {reference,loop,cpu,opencl,blockwise,expert_parallel}"},
        {moe_conform() + " selftest --family cpu,loop,cpu", "--family: 'cpu' is named twice"},
        {moe_conform() + " selftest --family loop --device 9:9", "--device 9:9: no OpenCL device matches '9:9'"},
        {moe_conform() + " check --suite " + kBundledSuite + " --results " + kBundledSuite + " --case-timeout -2", "--case-timeout: -2"},
        {run + " --no-such-flag", "--no-such-flag"},  // CLI11 exits 109 by itself; the tools say 2
        // A device that does not exist (PoCL's is 0:0): every opencl case would SKIP.
        {moe_conform() + " run --backend opencl,loop_f32 --device 9:9 --suite " + kBundledSuite,
         "--device 9:9: no OpenCL device matches '9:9' (devices found: 0:0 "},
        // A malformed setting of the opencl backend's environment: every opencl case would SKIP.
        {"MOE_OPENCL_STAGING=8y1024 " + moe_conform() + " run --backend opencl --suite " + kBundledSuite,
         "MOE_OPENCL_STAGING: '8y1024' is not THREADSxKIB"},
        {"MOE_OPENCL_STAGING=0x1024 " + moe_conform() + " run --backend all --suite " + kBundledSuite,
         "MOE_OPENCL_STAGING: '0x1024' is not THREADSxKIB (threads 1-64"},
        {"MOE_OPENCL_GEMM=wid " + moe_conform() + " selftest --suite " + kBundledSuite,
         "MOE_OPENCL_GEMM: 'wid' is neither wide nor compact"},
        {"MOE_OPENCL_KERNEL_DIR=/no/such/dir " + moe_conform() + " run --backend opencl --suite " + kBundledSuite,
         "MOE_OPENCL_KERNEL_DIR: /no/such/dir is not a folder"},
        {"MOE_OPENCL_FUSE=yes " + moe_conform() + " run --backend opencl --suite " + kBundledSuite,
         "MOE_OPENCL_FUSE: 'yes' is neither 0"},
        {"MOE_OPENCL_ROWS_STEPS=3 " + moe_conform() + " run --backend opencl --suite " + kBundledSuite,
         "MOE_OPENCL_ROWS_STEPS: '3' is not 1, 2 or 4"},
        // The opencl mutants read the same variables: SKIPped, they would read as "not caught".
        {"MOE_OPENCL_STAGING=bad " + moe_conform() + " run --backend cpu,mutant:opencl_wrong_offset --suite " + kBundledSuite,
         "MOE_OPENCL_STAGING: 'bad' is not THREADSxKIB"},
        {"MOE_OPENCL_STAGING=bad " + moe_conform() + " run --backend opencl_missing_barrier --suite " + kBundledSuite,
         "MOE_OPENCL_STAGING: 'bad' is not THREADSxKIB"},
        // One file twice: its results would be reported twice.
        {moe_conform() + " run --backend loop_f32 --case " + bundled_case("topk_one.h5") + " --case " + kBundledSuite +
             "/../golden/topk_one.h5",
         "the same file as --case " + bundled_case("topk_one.h5")},
        // A list of commas alone: CLI11 would take the next flag as the value (a backend "--suite").
        {moe_conform() + " run --backend , --suite " + kBundledSuite, "--backend: ',' is only commas"},
        {moe_conform() + " run --backend=,, --suite " + kBundledSuite, "--backend: ',,' is only commas"},
    };
    for (const auto& [command, message] : refused) expect_refused_before_running(command, message);
    // Those variables concern the opencl backend only; a well-formed plan runs.
    const auto cpu = run_command("MOE_OPENCL_STAGING=bad " + run + " --filter 'exact_*'");
    CHECK(cpu.exit_code == 0);
    const auto staged = run_command("MOE_OPENCL_STAGING=3x4 MOE_OPENCL_FUSE=0 " + moe_conform() +
                                    " run --backend opencl --suite " + kBundledSuite + " --filter 'exact_*'");
    CAPTURE(staged.output);
    CHECK((staged.exit_code == 0 || staged.exit_code == 77));  // 77 where no OpenCL device exists
    // 0 is a value of its own for --case-timeout (no limit), not refused.
    const auto r = run_command(run + " --filter 'exact_*' --case-timeout 0");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
}

TEST_CASE("MOE_OPENCL_KERNEL_DIR: its .cl files replace the embedded ones (a changed activation fails)") {
    TempDir dir;
    std::string activation = file_bytes(std::string(MOE_SOURCE_DIR) + "/backends/opencl/src/kernels/activation.cl");
    const std::string exact = "x / (1.0f + exp(-beta * x))";
    REQUIRE(activation.find(exact) != std::string::npos);
    activation.replace(activation.find(exact), exact.size(), "x / (2.0f + exp(-beta * x))");
    {
        std::ofstream out(dir.path() / "activation.cl", std::ios::binary);
        out << activation;
    }
    const std::string run = moe_conform() + " run --backend opencl --suite " + kBundledSuite + " --filter 'exact_gemm*'";
    const auto changed = run_command("MOE_OPENCL_KERNEL_DIR=" + dir.path().string() + " " + run);
    CAPTURE(changed.output);
    CHECK(changed.exit_code == 1);
    CHECK(has(changed.output, "0 passed"));
    // The embedded kernel back: every case passes.
    {
        std::ofstream out(dir.path() / "activation.cl", std::ios::binary);
        out << file_bytes(std::string(MOE_SOURCE_DIR) + "/backends/opencl/src/kernels/activation.cl");
    }
    const auto same = run_command("MOE_OPENCL_KERNEL_DIR=" + dir.path().string() + " " + run);
    CAPTURE(same.output);
    CHECK(same.exit_code == 0);
    // A file that replaces nothing (a typo), or the files one folder down: refused, not ignored
    // (an A/B would compare the embedded kernels with themselves).
    fs::rename(dir.path() / "activation.cl", dir.path() / "activation_new.cl");
    const auto typo = run_command("MOE_OPENCL_KERNEL_DIR=" + dir.path().string() + " " + run);
    CAPTURE(typo.output);
    CHECK(typo.exit_code == 2);
    CHECK(has(typo.output, "/activation_new.cl replaces no kernel (the kernel files: common.cl, "));
    fs::create_directory(dir.path() / "kernels");
    fs::rename(dir.path() / "activation_new.cl", dir.path() / "kernels" / "activation.cl");
    const auto nested = run_command("MOE_OPENCL_KERNEL_DIR=" + dir.path().string() + " " + run);
    CAPTURE(nested.output);
    CHECK(nested.exit_code == 2);
    CHECK(has(nested.output, "holds none of the kernel files"));
}

TEST_CASE("report paths that cannot be written exit 2 before anything runs, naming the path") {
    TempDir dir;
    const std::string one = moe_conform() + " run --backend reference --case " + bundled_case("exact_gemm2_lane1.h5");
    const std::string missing = dir.path().string() + "/no/such";
    const std::pair<std::string, std::string> refused[] = {
        {one + " --json " + missing + "/r.json",
         "--json: " + missing + "/r.json: folder " + missing + " does not exist"},
        {one + " --junit " + missing + "/r.xml", "folder " + missing + " does not exist"},
        {one + " --html " + dir.path().string(), "--html: " + dir.path().string() + " is a folder; give a file name"},
        {one + " --write-results " + bundled_case("exact_gemm2_lane1.h5") + "/sub", "is not a folder"},
        {moe_conform() + " selftest --json " + missing + "/s.json", "folder " + missing + " does not exist"},
        {moe_conform() + " check --suite " + kBundledSuite + " --results " + kBundledSuite + " --html " + missing + "/c.html",
         "folder " + missing + " does not exist"},
        // Only a worker process can be stopped: a timeout in one process would be silently ignored.
        {one + " --no-isolation --case-timeout 5", "--no-isolation excludes --case-timeout"},
    };
    for (const auto& [command, message] : refused) expect_refused_before_running(command, message);
    CHECK(fs::is_empty(dir.path()));  // and nothing left behind

    // Outputs onto what the run reads, or onto each other: the suite copied, so that a
    // regression would damage the copy only.
    const fs::path suite = dir.path() / "suite";
    fs::create_directories(suite);
    fs::copy_file(bundled_case("exact_gemm2_lane1.h5"), suite / "exact_gemm2_lane1.h5");
    const std::string golden = (suite / "exact_gemm2_lane1.h5").string();
    const std::string run_copy = moe_conform() + " run --backend loop_f32 --no-manifest --suite " + suite.string();
    const std::pair<std::string, std::string> clashes[] = {
        {run_copy + " --write-results " + suite.string(), "result files there would replace golden files"},
        {run_copy + " --write-results " + (suite / ".").string(), "result files there would replace golden files"},
        {run_copy + " --json " + golden, "which this run reads"},
        {run_copy + " --json " + (dir.path() / "r").string() + " --junit " + (dir.path() / "r").string(),
         "give each report its own"},
    };
    const std::string before = file_bytes(golden);
    for (const auto& [command, message] : clashes) expect_refused_before_running(command, message);
    CHECK(file_bytes(golden) == before);
}

TEST_CASE("repro lines run as they are printed, whatever the case's path holds") {
    // A path with &, parentheses and a semicolon: each a shell syntax error or a second command if
    // left unquoted. The repro line is run by bash as printed; it must fail the same way (exit 1).
    TempDir dir;
    const fs::path folder = dir.path() / "a&b(1)";
    fs::create_directories(folder);
    const fs::path f = folder / "x;y.h5";
    fs::copy_file(bundled_case("exact_gemm2_lane1.h5"), f);
    const auto r =
        run_command(moe_conform() + " run --quiet --backend mutant:bias1_dropped --case '" + f.string() + "'");
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    const auto at = r.output.find("moe-conform run --backend mutant:bias1_dropped --case ");
    REQUIRE(at != std::string::npos);
    const std::string repro = r.output.substr(at, r.output.find('\n', at) - at);
    CHECK(has(repro, "'" + f.string() + "'"));
    const fs::path script = dir.path() / "repro.sh";
    std::ofstream(script) << "PATH=" << fs::path(moe_conform()).parent_path().string() << ":$PATH\n" << repro
                          << " --quiet > /dev/null\n";
    CHECK(run_command("/bin/bash '" + script.string() + "'").exit_code == 1);
}

TEST_CASE("every command's --help teaches: examples of that command and its exit codes") {
    for (const std::string command : {"list", "run", "check", "selftest", "shrink"}) {
        CAPTURE(command);
        const auto r = run_command(moe_conform() + " " + command + " --help");
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, "Examples:\n  moe-conform " + command));
        CHECK(has(r.output, "Exit codes"));
    }
}

namespace {

// A suite of one small case (no manifest): a selftest on it takes a second, so that a command a
// regression no longer refuses still ends at once.
std::string one_case_selftest(const TempDir& dir) {
    const fs::path suite = dir.path() / "one_case";
    fs::create_directories(suite);
    fs::copy_file(bundled_case("topk_one.h5"), suite / "topk_one.h5", fs::copy_options::overwrite_existing);
    return moe_conform() + " selftest --quiet --no-manifest --suite " + suite.string();
}

}  // namespace

TEST_CASE("outputs onto what a command reads are refused before it runs: run's plugin, selftest's suite, shrink's case") {
    TempDir dir;
    const fs::path suite = dir.path() / "suite";
    fs::create_directories(suite);
    fs::copy_file(bundled_case("topk_one.h5"), suite / "topk_one.h5");
    const std::string golden = (suite / "topk_one.h5").string();
    const std::string golden_before = file_bytes(golden);
    // run --json onto the --backend-lib plugin replaced the .so with the report, exit 0.
    const fs::path built_plugin = std::string(MOE_BINARY_DIR) + "/examples/plugin/example_loops.so";
    REQUIRE(fs::exists(built_plugin));
    const fs::path plugin = dir.path() / "mine.so";
    fs::copy_file(built_plugin, plugin);
    const std::string plugin_before = file_bytes(plugin.string());
    expect_refused_before_running(moe_conform() + " run --backend-lib " + plugin.string() + " --case " + golden +
                                      " --json " + (dir.path() / "." / "mine.so").string(),
                                  "is " + plugin.string() + ", which this run reads");
    CHECK(file_bytes(plugin.string()) == plugin_before);
    // selftest --json onto a golden file of its suite, and --json and --html on one file: both
    // were written, exit 0 (the case replaced; the JSON replaced by the HTML).
    const std::string selftest = moe_conform() + " selftest --quiet --no-manifest --suite " + suite.string();
    expect_refused_before_running(selftest + " --json " + golden, "--json " + golden + " is " + golden +
                                                                      ", which this run reads");
    const std::string both = (dir.path() / "s.x").string();
    expect_refused_before_running(selftest + " --json " + both + " --html " + both,
                                  "--html " + both + " is also the file of --json");
    CHECK_FALSE(fs::exists(both));
    // shrink -o onto its --case replaced the failing case with the shrunk one.
    expect_refused_before_running(moe_conform() + " shrink --backend mutant:lanes_swapped --case " + golden + " -o " +
                                      (suite / "." / "topk_one.h5").string(),
                                  "--out " + (suite / "." / "topk_one.h5").string() + " is " + golden +
                                      ", which this run reads");
    CHECK(file_bytes(golden) == golden_before);
}

TEST_CASE("--shard with a sign, blanks or no digits is refused; its message names the flag once") {
    // "1/-2" was read as shard 1 of 2^64 - 2: run took every case, selftest ran one backend and
    // passed with "0 of 0 mutants caught".
    const std::string run = moe_conform() + " run --backend reference --suite " + kBundledSuite;
    TempDir dir;
    const std::string selftest = one_case_selftest(dir);
    const std::pair<std::string, std::string> refused[] = {
        {run + " --shard 1/-2", "--shard: 1/-2: expected I/N in decimal digits, e.g. 2/4"},
        {run + " --shard ' 1/2'", "--shard:  1/2: expected I/N in decimal digits"},
        {run + " --shard +1/2", "--shard: +1/2: expected I/N in decimal digits"},
        {run + " --shard 1/99999999999999999999", "--shard: 1/99999999999999999999: out of range"},
        {moe_conform() + " check --suite " + kBundledSuite + " --results " + kBundledSuite + " --shard 1/-2", "--shard: 1/-2: expected"},
        {selftest + " --shard 1/-2", "--shard: 1/-2: expected I/N in decimal digits"},
        {run + " --shard ''", "--shard: an empty value: expected I/N, e.g. 2/4"},
    };
    for (const auto& [command, message] : refused) {
        expect_refused_before_running(command, message);
        CHECK_FALSE(has(run_command(command).output, "--shard: --shard"));
    }
}

TEST_CASE("an empty item in --backend or --family is refused, not dropped; 'all' twice is named as given") {
    const std::string one = " --case " + bundled_case("topk_one.h5");
    TempDir dir;
    const std::string selftest = one_case_selftest(dir);
    const std::pair<std::string, std::string> refused[] = {
        {moe_conform() + " run --backend cpu,,loop_f32" + one, "--backend: 'cpu,,loop_f32' has an empty item"},
        {moe_conform() + " run --backend loop_f32," + one, "--backend: 'loop_f32,' has an empty item"},
        {moe_conform() + " run --backend ,loop_f32" + one, "--backend: ',loop_f32' has an empty item"},
        {moe_conform() + " run --backend ''" + one, "--backend: an empty value"},
        {moe_conform() + " run --backend all,all" + one, "--backend: 'all' is named twice"},
        {moe_conform() + " run --backend loop_f32 --backend loop_f32" + one, "--backend: 'loop_f32' is named twice"},
        {selftest + " --family loop,,cpu", "--family: 'loop,,cpu' has an empty item"},
        {selftest + " --family loop,", "--family: 'loop,' has an empty item"},
        {selftest + " --family loop,frob", "--family: frob not in {"},
    };
    for (const auto& [command, message] : refused) expect_refused_before_running(command, message);
}

TEST_CASE("--threads is a decimal count up to the cap; empty values and switches given a value are refused") {
    const std::string one = moe_conform() + " run --backend reference --case " + bundled_case("topk_one.h5");
    const std::string check =
        moe_conform() + " check --case " + bundled_case("topk_one.h5") + " --results " + bundled_case("topk_one.h5");
    TempDir dir;
    const std::string selftest = one_case_selftest(dir);
    const std::pair<std::string, std::string> refused[] = {
        // CLI11 read "010" as octal 8 and "0x10" as 16, and said "Could not convert" for "1.5".
        {one + " --threads 0x10", "--threads: 0x10: expected a whole number in decimal digits"},
        {one + " --threads 1.5", "--threads: 1.5: expected a whole number in decimal digits"},
        {one + " --threads 100000", "--threads: 100000: out of range, at most "},
        {selftest + " --threads 0x10", "--threads: 0x10: expected a whole number"},
        {moe_conform() + " shrink --backend loop_f32 --case " + bundled_case("topk_one.h5") + " --threads 1e3",
         "--threads: 1e3: expected a whole number"},
        // An empty value was read as if the flag were absent (or, for --filter, matched nothing).
        {check + " --precision ''", "--precision: an empty value"},
        {check + " --name ''", "--name: an empty value"},
        {check + " --filter ''", "--filter: an empty value"},
        {one + " --filter ''", "--filter: an empty value"},
        {one + " --device ''", "--device: an empty value"},
        {selftest + " --device ''", "--device: an empty value"},
        // `--no-isolation=false` still counted as given, and excluded --case-timeout.
        {one + " --no-isolation=false --case-timeout 5", "--no-isolation=false: --no-isolation is a switch and takes no value"},
        {check + " --no-isolation=false", "--no-isolation is a switch"},
    };
    for (const auto& [command, message] : refused) expect_refused_before_running(command, message);
    // "09" is decimal 9 (CLI11 refused it as a bad octal number).
    const auto r = run_command(one + " --threads 09 --quiet");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
}

TEST_CASE("--device: an index past 2^64 matches no device (was an internal error: stoul); no opencl backend: refused") {
    const std::string one = " --case " + bundled_case("topk_one.h5");
    const std::string huge = "0:99999999999999999999";
    TempDir dir;
    const std::string selftest = one_case_selftest(dir);
    for (const std::string& command : {moe_conform() + " run --backend opencl" + one, selftest + " --family opencl",
                                       moe_conform() + " shrink --backend opencl" + one}) {
        const auto r = run_command(command + " --device " + huge);
        CAPTURE(command);
        CAPTURE(r.output);
        CHECK(r.exit_code == 2);
        CHECK_FALSE(has(r.output, "internal error"));
        CHECK_FALSE(has(r.output, "golden file"));  // run blamed the golden file
        CHECK((has(r.output, "no OpenCL device matches '" + huge + "'") || has(r.output, "no OpenCL device found")));
    }
    // Where no opencl backend or mutant runs, --device was ignored (run, shrink) or checked for
    // nothing (selftest --family loop); moe-bench refused it.
    const std::pair<std::string, std::string> refused[] = {
        {moe_conform() + " run --backend loop_f32 --device 0:0" + one,
         "--device 0:0 picks the OpenCL device of the opencl backend and its mutants; --backend loop_f32 runs none"},
        {moe_conform() + " shrink --backend mutant:lanes_swapped --device 0:0" + one + " -o " +
             (dir.path() / "small.h5").string(),  // a regression writes there, not into the working folder
         "--backend mutant:lanes_swapped runs none of them"},
        {selftest + " --family loop,cpu --device 0:0", "--family loop,cpu runs none of them"},
    };
    for (const auto& [command, message] : refused) expect_refused_before_running(command, message);
}

TEST_CASE("shrink's repro line carries --device") {
    TempDir dir;
    const std::string out = (dir.path() / "small.h5").string();
    const auto r = run_command(moe_conform() + " shrink --quiet --backend mutant:opencl_wrong_offset --device 0:0 --case " +
                               bundled_case("topk_one.h5") + " -o " + out + " --max-seconds 20");
    CAPTURE(r.output);
    if (has(r.output, "unavailable")) return;  // no OpenCL device on this machine
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "repro: " + moe_conform() + " run --backend mutant:opencl_wrong_offset --device 0:0 --case " + out));
}

TEST_CASE("--max-memory past 2^64 - 1 bytes is out of range, not 2^64 - 1") {
    // CLI11 saturated the number ("18446744073709551616k" said "18446744073709551615 multiplied by k").
    const std::string one = moe_conform() + " run --backend reference --case " + bundled_case("topk_one.h5");
    for (const std::string value : {"99999999999999999999", "18446744073709551616k"})
        expect_refused_before_running(one + " --max-memory " + value,
                                      "--max-memory: " + value + ": out of range, at most 18446744073709551615 bytes");
    const auto r = run_command(one + " --quiet --max-memory 18446744073709551615");
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
}
