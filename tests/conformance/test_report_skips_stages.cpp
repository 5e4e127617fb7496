// Two hints of the reports (spec/report-format.md, 3.3, 3.4, 4.3, 4.6), from results made here:
// the skips grouped by reason (text: above the count line, at most 10 groups, long reasons cut;
// JSON: skip_reasons, complete), and a failing output whose stages are all within bound (text:
// the `stages:` line, naming the stages the backend did not return; JSON: stages_within_bound).
// tests/cli/test_report_hints.cpp reads the same from moe-conform run.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/results.hpp"
#include "temp_dir.hpp"

using namespace moe::conformance;
using nlohmann::json;

namespace {

CaseResult result(const std::string& name, const std::string& backend, Status status, const std::string& reason) {
    CaseResult r;
    r.case_name = name;
    r.backend = backend;
    r.status = status;
    r.reason = reason;
    return r;
}

std::string text_of(const std::vector<CaseResult>& results) {
    std::ostringstream out;
    write_text_report(out, RunInfo{}, results);
    return out.str();
}

std::string tail_from(const std::string& text, const std::string& from) {
    const auto at = text.rfind(from);
    return at == std::string::npos ? "" : text.substr(at);
}

json json_of(const std::vector<CaseResult>& results) {
    moe::test::TempDir dir;
    const std::string file = (dir.path() / "r.json").string();
    write_json_report(file, RunInfo{}, results);
    std::ifstream in(file);
    return json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

// A GEMM3 FAIL whose returned stages were compared and all within bound.
CaseResult after_stages(std::vector<std::pair<std::string, double>> stages) {
    CaseResult r = result("gemm3_case", "acme", Status::fail, "128 of 128 elements outside their bound");
    r.metrics.elements = 128;
    r.metrics.over_bound = 128;
    r.params = case_params(moe::attributes_for(moe::ExpertType::gemm3_swiglu, moe::Convention::openvino, 1.0, 0.0));
    r.stages_within_bound = std::move(stages);
    return r;
}

}  // namespace

TEST_CASE("skip_reasons: SKIP results by reason, most frequent first, ties in run order, with their backends") {
    const std::vector<CaseResult> v = {
        result("a", "acme", Status::skip, "only GEMM3"),   result("b", "opencl", Status::skip, "no platform"),
        result("c", "acme", Status::pass, ""),             result("d", "acme", Status::skip, "no platform"),
        result("e", "acme", Status::xfail, "only GEMM3"),  result("f", "acme", Status::skip, "f16"),
        result("g", "opencl", Status::skip, "no platform")};
    const std::vector<SkipGroup> g = skip_reasons(v);
    REQUIRE(g.size() == 3);
    CHECK(g[0].reason == "no platform");
    CHECK(g[0].count == 3);
    CHECK(g[0].backends == std::vector<std::string>{"opencl", "acme"});
    CHECK(g[1].reason == "only GEMM3");  // the XFAIL with the same reason is not a skip
    CHECK(g[1].count == 1);
    CHECK(g[2].reason == "f16");
    CHECK(skip_reasons({result("a", "x", Status::pass, "")}).empty());
}

TEST_CASE("the text report groups the skips above the count line, which stays last") {
    std::vector<CaseResult> v;
    for (int i = 0; i < 96; ++i) v.push_back(result("g" + std::to_string(i), "acme", Status::skip, "not supported: acme: only GEMM3_SWIGLU"));
    for (int i = 0; i < 37; ++i) v.push_back(result("o" + std::to_string(i), "opencl", Status::skip, "opencl: no OpenCL platform"));
    v.push_back(result("p", "acme", Status::pass, ""));
    CHECK(tail_from(text_of(v), "skipped by reason:") ==
          "skipped by reason:\n"
          "  96 x \"not supported: acme: only GEMM3_SWIGLU\"\n"
          "  37 x \"opencl: no OpenCL platform\"\n"
          "1 passed, 0 failed, 133 skipped\n");
    // Nothing skipped, no block.
    CHECK(text_of({result("p", "acme", Status::pass, "")}).find("skipped by reason") == std::string::npos);
}

TEST_CASE("the skip block lists 10 reasons at most, on one line each, cut at 100 columns") {
    std::vector<CaseResult> v;
    // 12 reasons; reason k given 20 - k times. The first is long and spans lines; one is empty.
    const std::string longer = "line one\nline two " + std::string(200, 'x');
    for (int k = 0; k < 12; ++k) {
        const std::string reason = k == 0 ? longer : k == 5 ? "" : "reason " + std::to_string(k);
        for (int n = 0; n < 20 - k; ++n) v.push_back(result("c", "b", Status::skip, reason));
    }
    const std::string block = tail_from(text_of(v), "skipped by reason:");
    std::istringstream lines(block);
    std::vector<std::string> l;
    for (std::string s; std::getline(lines, s);) l.push_back(s);
    REQUIRE(l.size() == 13);  // the title, 10 groups, "and N more", the count line
    CHECK(l[1] == "  20 x \"line one line two " + std::string(100 - 18 - 3, 'x') + "...\"");
    CHECK(l[2] == "  19 x \"reason 1\"");
    CHECK(l[6] == "  15 x (no reason given)");
    CHECK(l[10] == "  11 x \"reason 9\"");
    CHECK(l[11] == "  ... and 2 more reasons (19 results)");
    CHECK(l[12] == "0 passed, 0 failed, 174 skipped");

    // JSON: every group, every reason whole, counts adding up to summary.skipped.
    const json doc = json_of(v);
    REQUIRE(doc.at("skip_reasons").size() == 12);
    CHECK(doc["skip_reasons"][0] == json{{"reason", longer}, {"count", 20}, {"backends", {"b"}}});
    std::size_t total = 0;
    for (const auto& g : doc["skip_reasons"]) total += g.at("count").get<std::size_t>();
    CHECK(total == doc.at("summary").at("skipped").get<std::size_t>());
}

TEST_CASE("a FAIL with every stage within bound says the divergence is after them; JSON lists them") {
    const CaseResult full = after_stages({{"gate", 0.05}, {"up", 0.07}, {"act", 0.03}, {"down", 0.01}});
    std::string text = text_of({full});
    CHECK(text.find("  stages: gate, up, act, down within bound; the divergence is after them (routing weights, the "
                    "sum over top-k, or the output's rounding)\n  repro: ") != std::string::npos);
    // Stages the backend did not return after the last one it did are suspects too.
    text = text_of({after_stages({{"gate", 0.05}, {"up", 0.07}})});
    CHECK(text.find("  stages: gate, up within bound; the divergence is after them (act, down, which the backend did "
                    "not return; routing weights, the sum over top-k, or the output's rounding)\n") != std::string::npos);

    const json doc = json_of({full, result("other", "acme", Status::fail, "x")});
    const json& r = doc.at("results").at(0);
    CHECK(r.at("first_divergent_stage").is_null());
    CHECK(r.at("stages_within_bound") == json::parse(R"([{"stage": "gate", "worst_ratio": 0.05},
        {"stage": "up", "worst_ratio": 0.07}, {"stage": "act", "worst_ratio": 0.03}, {"stage": "down", "worst_ratio": 0.01}])"));
    // No stages compared: null in both, as "unknown".
    CHECK(doc["results"][1].at("first_divergent_stage").is_null());
    CHECK(doc["results"][1].at("stages_within_bound").is_null());
}
