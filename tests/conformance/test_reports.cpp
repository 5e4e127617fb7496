// The three reports (spec/report-format.md): the count line, the text table and details, the JSON
// document (read back, and checked against spec/report.schema.json by
// tests/python/check_report_files.py) and the JUnit XML (checked against the JSON by the same
// script), with every status, non-finite metrics and characters that need escaping.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/results.hpp"
#include "moe/conformance/shell_word.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;
using namespace moe::conformance;
using nlohmann::json;

namespace {

constexpr const char* kPython = "/usr/bin/python3";  // has jsonschema (the PATH python may not)
const std::string kChecker = std::string(MOE_SOURCE_DIR) + "/tests/python/check_report_files.py";
const std::string kSchema = std::string(MOE_SOURCE_DIR) + "/spec/report.schema.json";
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::string kErrorMessage = "backend threw: tensor <gate&up> \"bad\" 'shape'\nsecond line";

using moe::test::TempDir;

std::string read_text(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << file);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const std::string& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary);
    out << text;
    REQUIRE(out);
}

CaseResult base(const std::string& name, const std::string& backend, Status status) {
    CaseResult r;
    r.case_name = name;
    r.file = "suite/ci/" + name + ".h5";
    r.backend = backend;
    r.data_type = "f32";
    r.compute_type = "f32";
    r.storage_type = "f32";
    r.status = status;
    r.seconds = 0.0125;
    r.repro = "moe-conform run --backend " + backend + " suite/ci/" + name + ".h5";
    return r;
}

// Every status, two backends, non-finite metrics, and text that needs escaping.
std::vector<CaseResult> sample_results() {
    std::vector<CaseResult> v;

    CaseResult pass = base("gemm2_small", "reference", Status::pass);
    pass.metrics.elements = 4096;
    pass.metrics.max_abs_error = 1.5e-7;
    pass.metrics.max_rel_error = 3.25e-6;
    pass.metrics.max_ulps = 2;
    pass.metrics.worst_ratio = 0.031;
    pass.metrics.worst = ElementReport{3, 17, 0.5, 0.50000015, 4.8e-6};
    // GPT-OSS's constants in the spec convention: gate lane 1, KN weights, dense routing.
    pass.params = case_params(moe::attributes_for(moe::ExpertType::gemm2_bias_swiglu_clamp, moe::Convention::spec, 1.702, 7.0));
    v.push_back(pass);

    CaseResult fail = base("gemm3_bf16", "fakegpu", Status::fail);
    fail.data_type = "bf16";
    fail.storage_type = "bf16";
    fail.reason = "12 elements outside their bound";
    fail.metrics.elements = 2048;
    fail.metrics.over_bound = 12;
    fail.metrics.max_abs_error = 0.25;
    fail.metrics.max_rel_error = 0.125;
    fail.metrics.max_ulps = 4096;
    fail.metrics.worst_ratio = 12.5;
    fail.metrics.worst = ElementReport{7, 33, 2.0, 2.25, 0.02};
    for (std::size_t i = 0; i < 10; ++i)
        fail.metrics.violations.push_back(ElementReport{i, 33, 1.0, 1.0 + 0.1 * static_cast<double>(i + 1), 0.05});
    fail.first_divergent_stage = StageDivergence{"gate_up", 3.5, 7, 1, 65, -0.75, -0.5, 0.0714};
    fail.params = case_params(moe::attributes_for(moe::ExpertType::gemm3_swiglu, moe::Convention::openvino, 1.625, 0.0));
    v.push_back(fail);

    CaseResult skip = base("gemm2_f16", "fakegpu", Status::skip);
    skip.data_type = skip.compute_type = skip.storage_type = "f16";
    skip.reason = "backend does not support f16";
    skip.seconds = 0;
    v.push_back(skip);

    CaseResult xfail = base("gemm3_large_k", "reference", Status::xfail);
    xfail.reason = "accumulation order differs";
    xfail.ticket = "MOE-42";
    xfail.metrics.elements = 100;
    xfail.metrics.over_bound = 1;
    xfail.metrics.max_abs_error = 1e-3;
    xfail.metrics.max_rel_error = kNaN;  // deliberately non-finite
    xfail.metrics.max_ulps = 50;
    xfail.metrics.worst_ratio = 1.5;
    v.push_back(xfail);

    CaseResult xpass = base("gemm2_clamp", "fakegpu", Status::xpass);
    xpass.reason = "listed as failing but passed";
    xpass.ticket = "MOE-7";
    xpass.metrics.elements = 64;
    xpass.metrics.max_abs_error = 0;
    xpass.metrics.worst_ratio = 0.5;
    v.push_back(xpass);

    CaseResult mistrusted = base("gemm2_saturated", "reference", Status::mistrusted);
    mistrusted.reason = "output is 98% zeros";
    mistrusted.metrics.elements = 256;
    mistrusted.metrics.worst_ratio = 0.0;
    v.push_back(mistrusted);

    CaseResult error = base("gemm3_exact", "fakegpu", Status::error);
    error.reason = kErrorMessage;
    v.push_back(error);

    // An exact case that failed with a zero bound: the worst ratio is infinite.
    CaseResult exact = base("gemm2_exact", "reference", Status::fail);
    exact.exact = true;
    exact.reason = "exact comparison: 1 element differs";
    exact.metrics.elements = 16;
    exact.metrics.over_bound = 1;
    exact.metrics.max_abs_error = 1.0 / 1024;
    exact.metrics.max_rel_error = 1.0 / 1024;
    exact.metrics.max_ulps = 8;
    exact.metrics.worst_ratio = kInf;
    exact.metrics.worst = ElementReport{0, 5, 1.0, 1.0 + 1.0 / 1024, 0.0};
    exact.metrics.violations.push_back(*exact.metrics.worst);
    exact.params = case_params(moe::attributes_for(moe::ExpertType::gemm2_bias_swiglu_clamp, moe::Convention::openvino, 0.1, 7.0));
    v.push_back(exact);

    return v;
}

RunInfo sample_info() {
    RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.command_line = "moe-conform run --tier ci --json r.json --junit r.xml suite/ci";
    info.backends = {"reference", "fakegpu"};
    info.suite = "suite/ci";
    info.tier = "ci";
    info.started_utc = "2025-01-02T03:04:05Z";
    info.seconds = 1.75;
    return info;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string last_non_empty_line(const std::string& text) {
    auto lines = lines_of(text);
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines.empty() ? "" : lines.back();
}

std::string checker_command(const std::string& json_file, const std::string& xml_file, const std::string& extra = "") {
    return std::string(kPython) + " " + kChecker + " " + json_file + " " + xml_file + " " + kSchema + extra;
}

}  // namespace

TEST_CASE("count_line: three counts always, the others only when non-zero") {
    RunSummary s;
    CHECK(count_line(s) == "0 passed, 0 failed, 0 skipped");
    s.passed = 96;
    s.skipped = 2;
    CHECK(count_line(s) == "96 passed, 0 failed, 2 skipped");
    s.failed = 1;
    s.errors = 3;
    CHECK(count_line(s) == "96 passed, 1 failed, 2 skipped, 3 errors");
    s.xfailed = 4;
    s.xpassed = 5;
    s.mistrusted = 6;
    CHECK(count_line(s) == "96 passed, 1 failed, 2 skipped, 4 xfail, 5 xpass, 6 mistrusted, 3 errors");
    CHECK(count_line(summarize(sample_results())) ==
          "1 passed, 2 failed, 1 skipped, 1 xfail, 1 xpass, 1 mistrusted, 1 errors");
}

TEST_CASE("text report: header, table, details, repro lines, count line last") {
    const auto results = sample_results();
    std::ostringstream out;
    write_text_report(out, sample_info(), results);
    const std::string text = out.str();
    INFO(text);

    // Header.
    CHECK(text.rfind("moe-conform 0.1.0\n", 0) == 0);
    CHECK(text.find("2025-01-02T03:04:05Z") != std::string::npos);
    CHECK(text.find("suite/ci") != std::string::npos);
    CHECK(text.find("tier:     ci") != std::string::npos);
    CHECK(text.find("reference, fakegpu") != std::string::npos);

    // One row per result, in order, columns aligned: every row's backend column starts where the
    // header's does.
    const auto lines = lines_of(text);
    std::size_t header = lines.size();
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (lines[i].rfind("STATUS", 0) == 0) {
            header = i;
            break;
        }
    REQUIRE(header + results.size() < lines.size());
    const std::size_t backend_col = lines[header].find("BACKEND");
    const std::size_t ratio_end = lines[header].find("ERR/BOUND") + std::string("ERR/BOUND").size();
    for (std::size_t i = 0; i < results.size(); ++i) {
        const std::string& row = lines[header + 1 + i];
        CAPTURE(row);
        CHECK(row.rfind(std::string(status_name(results[i].status)), 0) == 0);
        CHECK(row.compare(backend_col, results[i].backend.size(), results[i].backend) == 0);
        CHECK(row.find(results[i].case_name) != std::string::npos);
        CHECK(row.find(results[i].data_type + "/" + results[i].compute_type) != std::string::npos);
        CHECK(row.size() >= ratio_end);
        CHECK(row[ratio_end - 1] != ' ');  // right-aligned ratio (or "-") ends under the header
    }
    const std::string& pass_row = lines[header + 1];
    CHECK(pass_row.find("1.50e-07") != std::string::npos);
    CHECK(pass_row.find("3.25e-06") != std::string::npos);
    CHECK(pass_row.find("0.031") != std::string::npos);  // headroom on a PASS
    const std::string& skip_row = lines[header + 3];
    CHECK(skip_row.find("backend does not support f16") != std::string::npos);
    CHECK(skip_row.find("e-") == std::string::npos);  // no metrics for a skip
    CHECK(lines[header + 4].find("nan") != std::string::npos);  // NaN max rel error of the xfail
    CHECK(lines[header + 4].find("[MOE-42]") != std::string::npos);
    CHECK(lines[header + 7].find("backend threw") != std::string::npos);  // error message, one line
    CHECK(lines[header + 8].find("inf") != std::string::npos);  // infinite ratio of the exact failure

    // Details of the FAIL.
    CHECK(text.find("12 of 2048 elements outside their bound (0.59%)") != std::string::npos);
    CHECK(text.find("worst element: token 7, feature 33: reference 2, got 2.25, bound 2.00e-02") !=
          std::string::npos);
    CHECK(text.find("violations (first 10 of 12)") != std::string::npos);
    CHECK(text.find("first divergent stage: gate_up at token 7, slot 1, feature 65") != std::string::npos);
    CHECK(text.find("repro: moe-conform run --backend fakegpu suite/ci/gemm3_bf16.h5\n") != std::string::npos);
    // Details of the XPASS and the ERROR (whole message, both lines), but not of the others.
    CHECK(text.find("repro: moe-conform run --backend fakegpu suite/ci/gemm2_clamp.h5\n") != std::string::npos);
    CHECK(text.find("repro: moe-conform run --backend fakegpu suite/ci/gemm3_exact.h5\n") != std::string::npos);
    CHECK(text.find("    second line\n") != std::string::npos);
    CHECK(text.find("repro: moe-conform run --backend reference suite/ci/gemm2_small.h5") == std::string::npos);
    CHECK(text.find("repro: moe-conform run --backend fakegpu suite/ci/gemm2_f16.h5") == std::string::npos);
    CHECK(text.find("1 of 16 elements outside their bound (6.25%)") != std::string::npos);
    // The op's parameters, right after the types line, in spec/README's names: a kernel with a
    // constant compiled in (swish beta 1) fails these cases, and the details now say their values.
    // GEMM3 has no clamp_limit; numbers in the fewest digits that read back (0.1, not
    // 0.10000000000000001); a result whose file was not read (the ERROR here) has no such line.
    CHECK(text.find("  types: data bf16, compute f32, storage bf16\n"
                    "  params: GEMM3_SWIGLU, openvino convention, swish_beta 1.625, gate_lane 0, weight_layout NK, "
                    "routing_layout compact\n") != std::string::npos);
    CHECK(text.find("  types: data f32, compute f32, storage f32, exact comparison\n"
                    "  params: GEMM2_BIAS_SWIGLU_CLAMP, openvino convention, swish_beta 0.1, clamp_limit 7, gate_lane 0, "
                    "weight_layout NK, routing_layout compact\n") != std::string::npos);
    CHECK(text.find("params: GEMM2_BIAS_SWIGLU_CLAMP, spec") == std::string::npos);  // the PASS: no details
    const std::size_t error_block = text.find("ERROR fakegpu gemm3_exact");
    REQUIRE(error_block != std::string::npos);
    CHECK(text.substr(error_block, text.find("repro:", error_block) - error_block).find("params:") == std::string::npos);

    // Summary: failure repro lines, then the count line last.
    const std::size_t summary = text.find("\nSummary\n");
    REQUIRE(summary != std::string::npos);
    CHECK(text.find("  moe-conform run --backend fakegpu suite/ci/gemm3_bf16.h5\n", summary) != std::string::npos);
    CHECK(text.find("  moe-conform run --backend reference suite/ci/gemm2_exact.h5\n", summary) !=
          std::string::npos);
    CHECK(last_non_empty_line(text) == count_line(summarize(results)));
    CHECK(text.back() == '\n');
}

TEST_CASE("text report: an empty run and many failures") {
    std::ostringstream empty;
    write_text_report(empty, sample_info(), {});
    CHECK(empty.str().find("(no results)") != std::string::npos);
    CHECK(last_non_empty_line(empty.str()) == "0 passed, 0 failed, 0 skipped");

    std::vector<CaseResult> many;
    for (int i = 0; i < 13; ++i) many.push_back(base("case" + std::to_string(i), "reference", Status::fail));
    std::ostringstream out;
    write_text_report(out, sample_info(), many);
    const std::string text = out.str();
    const std::size_t summary = text.find("\nSummary\n");
    REQUIRE(summary != std::string::npos);
    CHECK(text.find("suite/ci/case9.h5\n", summary) != std::string::npos);
    CHECK(text.find("suite/ci/case10.h5\n", summary) == std::string::npos);  // first 10 only
    CHECK(text.find("... and 3 more", summary) != std::string::npos);
    CHECK(last_non_empty_line(text) == "0 passed, 13 failed, 0 skipped");
}

TEST_CASE("text report: a case named in UTF-8 keeps the table's columns in line") {
    // Two bytes, one column: padding by bytes put every column after the name one place left.
    std::vector<CaseResult> rows = {base("gemm_\xce\xb3", "reference", Status::pass),
                                    base("gemm_ab", "reference", Status::pass)};
    std::ostringstream out;
    write_text_report(out, sample_info(), rows);
    std::istringstream lines(out.str());
    std::vector<std::size_t> type_column;  // the column (in characters) where "f32/" starts
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("PASS", 0) != 0) continue;
        const std::size_t at = line.find("f32/");
        REQUIRE(at != std::string::npos);
        std::size_t chars = 0;
        for (std::size_t i = 0; i < at; ++i) chars += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
        type_column.push_back(chars);
    }
    REQUIRE(type_column.size() == 2);
    CHECK(type_column[0] == type_column[1]);
}

TEST_CASE("text report: the NOTE column escapes C1 controls, bidirectional overrides and invalid UTF-8") {
    // A backend's message (a plugin's, a driver's) is shown on one line in the table. Control
    // characters become spaces; what else a terminal acts on must not reach it raw: U+009B (CSI),
    // U+0085 (NEL), U+202E (right-to-left override), bytes that are not UTF-8.
    CaseResult skip = base("gemm2_f16", "fakegpu", Status::skip);  // a SKIP: no details block
    skip.reason = "not supported:\xc2\x9b" "2J\xe2\x80\xae rtl \xff\xc3( caf\xc3\xa9 C:\\dir\r\nnext";
    skip.ticket = "T\xc2\x85-1";
    std::ostringstream out;
    write_text_report(out, sample_info(), {skip});
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("not supported:\\xc2\\x9b2J\\xe2\\x80\\xae rtl \\xff\\xc3( caf\xc3\xa9 C:\\dir next "
                    "[T\\xc2\\x85-1]") != std::string::npos);
    for (const char* raw : {"\xc2\x9b", "\xc2\x85", "\xe2\x80\xae", "\xff", "\r"})
        CHECK(text.find(raw) == std::string::npos);
}

TEST_CASE("JSON and JUnit reports: contents, schema, and agreement") {
    TempDir dir;
    const auto results = sample_results();
    const std::string json_file = dir / "report.json";
    const std::string xml_file = dir / "report.xml";
    write_json_report(json_file, sample_info(), results);
    write_junit_report(xml_file, sample_info(), results);
    CHECK_FALSE(fs::exists(json_file + ".tmp"));
    CHECK_FALSE(fs::exists(xml_file + ".tmp"));

    SUBCASE("JSON reads back with every field") {
        const json doc = json::parse(read_text(json_file));
        CHECK(doc["format"] == "moe-conform-report");
        CHECK(doc["format_version"] == 1);
        CHECK(doc["tool"] == "moe-conform 0.1.0");
        CHECK(doc["command_line"] == sample_info().command_line);
        CHECK(doc["started_utc"] == "2025-01-02T03:04:05Z");
        CHECK(doc["seconds"].get<double>() == 1.75);
        CHECK(doc["suite"] == "suite/ci");
        CHECK(doc["tier"] == "ci");
        CHECK(doc["backends"] == json::array({"reference", "fakegpu"}));
        const json& s = doc["summary"];
        CHECK(s["total"] == 8);
        CHECK(s["passed"] == 1);
        CHECK(s["failed"] == 2);
        CHECK(s["skipped"] == 1);
        CHECK(s["xfail"] == 1);
        CHECK(s["xpass"] == 1);
        CHECK(s["mistrusted"] == 1);
        CHECK(s["errors"] == 1);

        const json& rs = doc["results"];
        REQUIRE(rs.size() == results.size());
        for (std::size_t i = 0; i < results.size(); ++i) {
            CHECK(rs[i]["case"] == results[i].case_name);
            CHECK(rs[i]["backend"] == results[i].backend);
            CHECK(rs[i]["status"] == std::string(status_name(results[i].status)));
            CHECK(rs[i]["repro"] == results[i].repro);
        }
        const json& pass = rs[0];
        CHECK(pass["file"] == "suite/ci/gemm2_small.h5");
        CHECK(pass["data_type"] == "f32");
        CHECK(pass["exact"] == false);
        CHECK(pass["seconds"].get<double>() == 0.0125);
        CHECK(pass["metrics"]["elements"] == 4096);
        CHECK(pass["metrics"]["max_abs_error"].get<double>() == 1.5e-7);
        CHECK(pass["metrics"]["worst_ratio"].get<double>() == 0.031);
        CHECK(pass["metrics"]["worst"]["token"] == 3);
        CHECK(pass["metrics"]["worst"]["got"].get<double>() == 0.50000015);
        CHECK(pass["metrics"]["violations"].empty());
        CHECK(pass["first_divergent_stage"].is_null());
        // Every result whose case was read carries its parameters, a PASS too.
        CHECK(pass["params"] == json{{"expert_type", "GEMM2_BIAS_SWIGLU_CLAMP"}, {"convention", "spec"},
                                     {"swish_beta", 1.702}, {"clamp_limit", 7.0}, {"gate_lane", 1},
                                     {"weight_layout", "KN"}, {"routing_layout", "dense"}});

        const json& fail = rs[1];
        CHECK(fail["data_type"] == "bf16");
        CHECK(fail["reason"] == "12 elements outside their bound");
        CHECK(fail["metrics"]["over_bound"] == 12);
        CHECK(fail["metrics"]["violations"].size() == 10);
        CHECK(fail["metrics"]["violations"][9]["token"] == 9);
        CHECK(fail["metrics"]["violations"][9]["bound"].get<double>() == 0.05);
        const json& stage = fail["first_divergent_stage"];
        CHECK(stage["stage"] == "gate_up");
        CHECK(stage["worst_ratio"].get<double>() == 3.5);
        CHECK(stage["slot"] == 1);
        CHECK(stage["feature"] == 65);
        CHECK(stage["reference"].get<double>() == -0.75);
        // GEMM3: no clamp_limit.
        CHECK(fail["params"] == json{{"expert_type", "GEMM3_SWIGLU"}, {"convention", "openvino"}, {"swish_beta", 1.625},
                                     {"gate_lane", 0}, {"weight_layout", "NK"}, {"routing_layout", "compact"}});

        CHECK(rs[2]["reason"] == "backend does not support f16");
        CHECK(rs[2]["metrics"]["worst"].is_null());
        CHECK(rs[3]["ticket"] == "MOE-42");
        CHECK(rs[3]["metrics"]["max_rel_error"] == "nan");
        CHECK(rs[6]["reason"] == kErrorMessage);  // special characters survive the round trip
        CHECK(rs[6]["params"].is_null());  // not known: null, not left out
        CHECK(rs[7]["params"]["swish_beta"].get<double>() == 0.1);
        CHECK(rs[7]["exact"] == true);
        CHECK(rs[7]["metrics"]["worst_ratio"] == "inf");
        CHECK(rs[7]["metrics"]["worst"]["bound"].get<double>() == 0.0);
    }

    SUBCASE("the python checker accepts both files") {
        const auto r = moe::test::run_command(checker_command(json_file, xml_file, " --expect-total 8"));
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(last_non_empty_line(r.output).find(" passed, 0 failed") != std::string::npos);
    }

    SUBCASE("the python checker rejects a wrong total, a bad status and inconsistent counts") {
        auto wrong_total = moe::test::run_command(checker_command(json_file, xml_file, " --expect-total 9"));
        INFO(wrong_total.output);
        CHECK(wrong_total.exit_code != 0);

        json doc = json::parse(read_text(json_file));
        doc["results"][0]["status"] = "PASSED";
        const std::string bad_status = dir / "bad_status.json";
        write_text(bad_status, doc.dump(2));
        auto r = moe::test::run_command(checker_command(bad_status, xml_file));
        INFO(r.output);
        CHECK(r.exit_code != 0);
        CHECK(r.output.find("FAIL: JSON report validates against the schema") != std::string::npos);

        doc = json::parse(read_text(json_file));
        doc["summary"]["passed"] = 2;
        const std::string bad_summary = dir / "bad_summary.json";
        write_text(bad_summary, doc.dump(2));
        r = moe::test::run_command(checker_command(bad_summary, xml_file));
        INFO(r.output);
        CHECK(r.exit_code != 0);

        // The schema's params: clamp_limit is GEMM2's alone, and it holds no other key.
        for (const char* key : {"clamp_limit", "beta"}) {
            CAPTURE(key);
            doc = json::parse(read_text(json_file));
            doc["results"][1]["params"][key] = 1.0;  // the GEMM3 FAIL
            const std::string bad_params = dir / "bad_params.json";
            write_text(bad_params, doc.dump(2));
            r = moe::test::run_command(checker_command(bad_params, xml_file));
            INFO(r.output);
            CHECK(r.exit_code != 0);
            CHECK(r.output.find("FAIL: JSON report validates against the schema") != std::string::npos);
        }

        doc = json::parse(read_text(json_file));
        doc["results"][0]["extra_field"] = 1;
        const std::string extra = dir / "extra.json";
        write_text(extra, doc.dump(2));
        r = moe::test::run_command(checker_command(extra, xml_file));
        INFO(r.output);
        CHECK(r.exit_code != 0);

        // A JUnit report of other results disagrees with this JSON.
        auto fewer = results;
        fewer.pop_back();
        const std::string other_xml = dir / "other.xml";
        write_junit_report(other_xml, sample_info(), fewer);
        r = moe::test::run_command(checker_command(json_file, other_xml));
        INFO(r.output);
        CHECK(r.exit_code != 0);

        write_text(dir / "broken.xml", "<testsuites name=\"moe-conform\"><testsuite");
        r = moe::test::run_command(checker_command(json_file, dir / "broken.xml"));
        CHECK(r.exit_code != 0);
    }

    SUBCASE("JUnit: root, suites in backend order, skipped messages, escaping") {
        const std::string xml = read_text(xml_file);
        INFO(xml);
        CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) == 0);
        CHECK(xml.find("<testsuites name=\"moe-conform\" tests=\"8\" failures=\"3\" errors=\"1\" skipped=\"3\" "
                       "time=\"1.750\">") != std::string::npos);
        const std::size_t ref = xml.find("<testsuite name=\"moe-conform.reference\" tests=\"4\" failures=\"1\" "
                                         "errors=\"0\" skipped=\"2\"");
        const std::size_t gpu = xml.find("<testsuite name=\"moe-conform.fakegpu\" tests=\"4\" failures=\"2\" "
                                         "errors=\"1\" skipped=\"1\"");
        CHECK(ref != std::string::npos);
        CHECK(gpu != std::string::npos);
        CHECK(ref < gpu);
        CHECK(xml.find("<testcase classname=\"moe-conform.reference\" name=\"gemm2_small\"") != std::string::npos);
        CHECK(xml.find("<skipped message=\"SKIP: backend does not support f16\"/>") != std::string::npos);
        CHECK(xml.find("<skipped message=\"XFAIL: accumulation order differs\"/>") != std::string::npos);
        CHECK(xml.find("<skipped message=\"MISTRUSTED: output is 98% zeros\"/>") != std::string::npos);
        CHECK(xml.find("<failure message=\"12 elements outside their bound\" type=\"FAIL\">") != std::string::npos);
        CHECK(xml.find("type=\"XPASS\">") != std::string::npos);
        CHECK(xml.find("<error message=\"backend threw: tensor &lt;gate&amp;up&gt; &quot;bad&quot; "
                       "&apos;shape&apos;&#10;second line\" type=\"ERROR\">") != std::string::npos);
        CHECK(xml.find("repro: moe-conform run --backend fakegpu suite/ci/gemm3_bf16.h5") != std::string::npos);
        CHECK(xml.find("<property name=\"worst_ratio\" value=\"inf\"/>") != std::string::npos);
        CHECK(xml.find("<property name=\"max_rel_error\" value=\"nan\"/>") != std::string::npos);
        CHECK(xml.find("<gate&up>") == std::string::npos);
    }
}

TEST_CASE("JUnit: control characters and invalid UTF-8 still give well-formed XML; other backends last") {
    TempDir dir;
    auto results = sample_results();
    CaseResult odd = base("odd_\xC3\xA9_case", "extra", Status::error);  // UTF-8 "é" is kept
    // U+FFFE (EF BF BE) is well-formed UTF-8 that XML cannot carry: one U+FFFD, as a bad byte is.
    odd.reason = std::string("bell\x07 nul") + '\0' + " bad utf8 \xFF\xC3 end ]]> &amp; nonchar \xEF\xBF\xBE.";
    odd.repro.clear();
    results.push_back(odd);
    const std::string json_file = dir / "r.json";
    const std::string xml_file = dir / "r.xml";
    write_json_report(json_file, sample_info(), results);
    write_junit_report(xml_file, sample_info(), results);
    const std::string xml = read_text(xml_file);
    CHECK(xml.find("bell\\x07 nul\\x00 bad utf8 \xEF\xBF\xBD\xEF\xBF\xBD end ]]&gt; &amp;amp; nonchar \xEF\xBF\xBD.") !=
          std::string::npos);
    CHECK(xml.find("name=\"odd_\xC3\xA9_case\"") != std::string::npos);
    CHECK(xml.find("moe-conform.extra") > xml.find("moe-conform.fakegpu"));
    const std::string json_text = read_text(json_file);
    CHECK(json::parse(json_text)["results"].size() == 9);

    const auto r = moe::test::run_command(checker_command(json_file, xml_file, " --expect-total 9"));
    INFO(r.output);
    CHECK(r.exit_code == 0);
}

TEST_CASE("reports: an unwritable destination throws naming the file") {
    TempDir dir;
    const std::string missing = (dir.path() / "no_such_dir" / "report.json").string();
    const auto results = sample_results();
    try {
        write_json_report(missing, sample_info(), results);
        FAIL("write_json_report did not throw");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find(missing) != std::string::npos);
    }
    const std::string missing_xml = (dir.path() / "no_such_dir" / "report.xml").string();
    try {
        write_junit_report(missing_xml, sample_info(), results);
        FAIL("write_junit_report did not throw");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find(missing_xml) != std::string::npos);
    }
    // Writing over an existing report replaces it whole.
    const std::string file = dir / "r.json";
    write_text(file, "old contents that are longer than nothing");
    write_json_report(file, sample_info(), {});
    const json doc = json::parse(read_text(file));
    CHECK(doc["summary"]["total"] == 0);
    CHECK(doc["results"].empty());
    CHECK(fs::directory_iterator(dir.path()) != fs::directory_iterator());
    for (const auto& e : fs::directory_iterator(dir.path()))  // no temporary file left
        CHECK(e.path().filename().string().find(".tmp") == std::string::npos);

    // A FIFO (a device alike: /dev/null) at the destination is written into, not replaced by a
    // regular file (as root, a rename over /dev/null would replace the device node).
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string through;
    std::thread reader([&] { through = read_text(fifo); });
    write_json_report(fifo, sample_info(), {});
    reader.join();
    CHECK(json::parse(through)["summary"]["total"] == 0);
    CHECK(fs::is_fifo(fifo));
}

TEST_CASE("shell_word: any text comes back from a shell as one word, itself") {
    TempDir dir;
    const std::string texts[] = {"plain/path-1.h5", "with space", "a&b(1)", "semi;colon", "it's", "$HOME",
                                 "back\\slash", "glob*?[x]", "pipe|gt>lt<", "tab\there", "", "new\nline",
                                 "~tilde", "#hash", "!bang",
                                 // A terminal's controls, a C1 CSI, invalid UTF-8, a quote and a backslash among them,
                                 // and UTF-8 text that stays as it is.
                                 "esc\x1b[31m'q'\\b", "csi\xc2\x9b" "31m", "bad\xff\xfe", "caf\xc3\xa9 \xe2\x88\x91"};
    for (const std::string& t : texts) {
        CAPTURE(t);
        const std::string word = moe::conformance::shell_word(t);
        // The line is printed: no byte of it a terminal acts on (a repro line must not clear the
        // screen), yet the shell reads back the real text.
        for (const char c : word) CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
        CHECK(word.find("\xc2\x9b") == std::string::npos);
        const std::string script = (dir / "echo.sh").string();
        write_text(script, "printf '%s' " + word + " > " + (dir / "out").string() + "\n");
        REQUIRE(std::system(("/bin/bash " + script).c_str()) == 0);
        CHECK(read_text(dir / "out") == t);
    }
    CHECK(moe::conformance::shell_word("caf\xc3\xa9") == "'caf\xc3\xa9'");  // UTF-8 text quoted as it is
    CHECK(moe::conformance::shell_word("data/golden/x.h5") == "data/golden/x.h5");  // plain stays readable
}
