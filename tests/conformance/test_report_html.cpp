// The per-element error/bound grid of a failing comparison (Metrics::ratio_grid), the per-stage
// ratios of the first divergent stage, and the HTML pages of a run and of the selftest: self-
// contained, escaped, one heatmap per failure (at most 40), the catch matrix cell by cell.
// Rendering in Chromium is checked by tests/python/check_html_report.py (CTest).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "conformance_check.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/selftest.hpp"
#include "small_cases.hpp"
#include "temp_dir.hpp"

using namespace moe;
using namespace moe::conformance;

namespace {

const Precision kF32{DType::f32, DType::f32};

std::string read(const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

// Row `token` of the output moved far beyond its bound.
Tensor wrong_row(const Tensor& ref, std::size_t token, std::size_t H) {
    Tensor t = Tensor::from_f64(DType::f32, ref.shape(), ref.to_f64());
    for (std::size_t h = 0; h < H; ++h) t.set(token * H + h, ref.get(token * H + h) + 1.0);
    return t;
}

CaseResult failing_result(const std::string& name) {
    CaseResult r;
    r.case_name = name;
    r.backend = "b<&>";
    r.data_type = "f32";
    r.status = Status::fail;
    r.reason = "1 of 4 elements outside their bound";
    r.repro = "moe-conform run --backend b --case x.h5";
    RatioGrid g;
    g.tokens = 2, g.features = 2, g.rows = 2, g.cols = 2;
    g.cells = {0.5, 3.0, 0.0, INFINITY};
    r.metrics.ratio_grid = g;
    r.metrics.elements = 4;
    r.metrics.over_bound = 2;
    return r;
}

}  // namespace

TEST_CASE("ratio_grid: kept for failures only, one cell per element up to 64, the largest ratio of each cell") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 5, 12, 6, 4, 2));
    const Tensor& ref = c.outputs.at("output");
    CHECK_FALSE(compare_output(c, ref, kF32, 1).metrics.ratio_grid);
    const Comparison bad = compare_output(c, wrong_row(ref, 3, 12), kF32, 1);
    REQUIRE(bad.metrics.ratio_grid);
    const RatioGrid& g = *bad.metrics.ratio_grid;
    CHECK(g.rows == 5);
    CHECK(g.cols == 12);
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t f = 0; f < 12; ++f) CHECK((g.at(r, f) > 1.0) == (r == 3));  // a stripe: the wrong row

    // 70 tokens x 80 features: 64 x 64 cells, each the max over the elements it covers.
    const auto big = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 70, 80, 4, 2, 1));
    const Comparison b = compare_output(big, wrong_row(big.outputs.at("output"), 69, 80), kF32, 1);
    REQUIRE(b.metrics.ratio_grid);
    CHECK(b.metrics.ratio_grid->rows == 64);
    CHECK(b.metrics.ratio_grid->cols == 64);
    CHECK(b.metrics.ratio_grid->tokens == 70);
    for (std::size_t f = 0; f < 64; ++f) {
        CHECK(b.metrics.ratio_grid->at(63, f) > 1.0);  // token 69 lies in the last row of cells
        CHECK(b.metrics.ratio_grid->at(0, f) <= 1.0);
    }
}

TEST_CASE("first_divergent_stage lists every stage's worst error/bound in pipeline order") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino), true);
    auto stages = c.stages;
    Tensor act = stages.at("act");
    act.set(0, act.get(0) + 5.0);
    stages["act"] = act;
    const auto d = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(d);
    CHECK(d->stage == "act");
    REQUIRE(d->per_stage.size() == 4);
    CHECK(d->per_stage[0].first == "gate");
    CHECK(d->per_stage[0].second == 0.0);
    CHECK(d->per_stage[2].first == "act");
    CHECK(d->per_stage[2].second > 1.0);
    CHECK(d->per_stage[3].first == "down");
}

TEST_CASE("the run's HTML page: self-contained, escaped, a heatmap per failure, at most 40") {
    test::TempDir dir;
    CaseResult pass = failing_result("fine");
    pass.status = Status::pass;
    pass.metrics.ratio_grid.reset();
    std::vector<CaseResult> results = {pass, failing_result("case<1>")};
    RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.backends = {"b<&>"};
    const std::string file = (dir / "r.html").string();
    write_html_report(file, info, results);
    const std::string page = read(file);
    CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(page.find("</html>") != std::string::npos);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("http") == std::string::npos);
    CHECK(page.find("case&lt;1&gt;") != std::string::npos);
    CHECK(page.find("b&lt;&amp;&gt;") != std::string::npos);
    CHECK(page.find("case<1>") == std::string::npos);
    CHECK(count(page, "<svg class=\"heatmap\"") == 1);
    CHECK(page.find("fill=\"#40004b\"") != std::string::npos);  // the inf cell
    CHECK(page.find("fill=\"#fdae61\"") != std::string::npos);  // 3 x bound
    CHECK(page.find("href=\"#r1\"") != std::string::npos);      // the table links to the failure
    CHECK(page.find("moe-conform run --backend b --case x.h5") != std::string::npos);
    CHECK(page.find("1 passed, 1 failed, 0 skipped") != std::string::npos);


    // An element 113 x over an f32 bound: three digits printed reference and got alike.
    CaseResult close = failing_result("close");
    close.metrics.worst = ElementReport{2, 11, 0.178707882, 0.178833008, 1.11e-06};
    close.first_divergent_stage = StageDivergence{"gate_up", 927, 1, 1, 11, -1.24012, -1.24145, 1.43e-06, {}};
    std::vector<CaseResult> two = {pass, close};
    write_html_report(file, info, two);
    const std::string digits = read(file);
    CHECK(digits.find("<td class=\"n\">0.178707882</td><td class=\"n\">0.178833008</td><td class=\"n\">0.000125</td>"
                      "<td class=\"n\">1.11e-06</td><td class=\"n\">113</td>") != std::string::npos);
    CHECK(digits.find("reference -1.24012, got -1.24145") != std::string::npos);
    CHECK(digits.find("<a href=\"#r1\" style=\"color:inherit\">1</a>") != std::string::npos);  // the FAIL count

    std::vector<CaseResult> many(45, failing_result("c"));
    write_html_report(file, info, many);
    const std::string capped = read(file);
    CHECK(count(capped, "<svg class=\"heatmap\"") == 40);
    CHECK(count(capped, "heatmap omitted") == 5);
}

TEST_CASE("the selftest's HTML page: the score and one matrix cell per mutant and case") {
    test::TempDir dir;
    SelftestReport r;
    r.cases = {"alpha", "beta"};
    MutantVerdict m;
    m.name = "wrong";
    m.family = "f";
    m.caught_by = 1;
    m.cases = 2;
    m.cells = {{"alpha", Status::fail, INFINITY}, {"beta", Status::pass, 0.5}};
    r.mutants = {m};
    CorrectBackendVerdict c;
    c.name = "good";
    c.cells = {{"alpha", Status::pass, 0.1}, {"beta", Status::skip, 0.0}};
    r.correct = {c};
    const std::string file = (dir / "s.html").string();
    write_selftest_html(file, RunInfo{}, r);
    const std::string page = read(file);
    CHECK(page.find("Mutation score 1 / 1 = 100.0 %") != std::string::npos);
    CHECK(count(page, "<td style=\"background:") == 4);
    CHECK(page.find("title=\"alpha: FAIL, error/bound inf\"") != std::string::npos);
    CHECK(page.find("good (correct)") != std::string::npos);
    CHECK(page.find("<script") == std::string::npos);
}

TEST_CASE("HTML pages are valid UTF-8 whatever bytes a case name or message holds") {
    // Names come from golden files and messages from backends: any bytes. The page declares UTF-8.
    test::TempDir dir;
    CaseResult odd = failing_result("bad\xFF\xC3 name\x1B[2J \xC3\xA9");
    odd.reason = std::string("invalid \xF0\x28\x8C\x28 sequence, \xED\xA0\x80 surrogate");
    RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    const std::string file = (dir / "r.html").string();
    write_html_report(file, info, {odd});
    const std::string page = read(file);
    CHECK(page.find("bad\xEF\xBF\xBD\xEF\xBF\xBD name\\x1B[2J \xC3\xA9") != std::string::npos);  // é kept
    CHECK(page.find('\x1B') == std::string::npos);
    // Decoded by Python's strict UTF-8 codec, not ours.
    const std::string strict = "/usr/bin/python3 -c \"open('" + file + "', encoding='utf-8', errors='strict').read()\"";
    CHECK(std::system(strict.c_str()) == 0);
}
