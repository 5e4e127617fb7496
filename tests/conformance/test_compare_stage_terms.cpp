// A failing comparison runs the reference's error analysis once: its range check
// (beyond_declared_range) computes the stage terms, the Comparison carries them, and the first
// divergent stage is judged with them instead of a second analysis (on a model-sized case the
// analysis is seconds). The terms handed over must be exactly the analysis's, and the stage search
// must judge by the terms it is given.
#include <doctest/doctest.h>

#include <string>

#include "conformance_check.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/conformance/judge.hpp"
#include "moe/reference/error_terms.hpp"
#include "small_cases.hpp"

using namespace moe;
using namespace moe::conformance;

namespace {

const Precision kF32{DType::f32, DType::f32};

// T = 5, H = 12, I = 6, E = 4, K = 2, with the golden stages.
golden::GoldenCase make_case() {
    return test::golden_case(
        test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 5, 12, 6, 4, 2, DType::f32),
        true);
}

Tensor moved(const Tensor& t, std::size_t i, double delta) {
    Tensor r = t;
    r.set(i, t.get(i) + delta);
    return r;
}

}  // namespace

TEST_CASE("a failing comparison carries the error analysis's stage terms; any other carries none") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    const Comparison pass = compare_output(c, ref, kF32, 1);
    REQUIRE(pass.status == Status::pass);
    CHECK(pass.stage_terms.empty());

    const Comparison fail = compare_output(c, moved(ref, 7, 1.0), kF32, 1);
    REQUIRE(fail.status == Status::fail);
    const auto want = reference::error_terms(c.problem, true, 1).stages;
    REQUIRE(fail.stage_terms.size() == want.size());
    for (const auto& [key, t] : want) {
        CAPTURE(key);
        REQUIRE(fail.stage_terms.count(key) == 1);
        CHECK(fail.stage_terms.at(key) == t);  // same type, shape and bytes
    }
}

TEST_CASE("beyond_declared_range hands back the stage terms it computed") {
    const auto c = make_case();
    std::map<std::string, Tensor> terms;
    CHECK_FALSE(beyond_declared_range(c.problem, kF32, 1, &terms));
    const auto want = reference::error_terms(c.problem, true, 1).stages;
    REQUIRE(terms.size() == want.size());
    for (const auto& [key, t] : want) CHECK(terms.at(key) == t);
}

TEST_CASE("first_divergent_stage judges by the stage terms it is given") {
    const auto c = make_case();
    REQUIRE(c.stages.count("act") == 1);
    const auto terms = reference::error_terms(c.problem, true, 1).stages;
    // act [T = 5, K = 2, I = 6]: element (token 2, slot 1, feature 3), moved past its bound.
    const std::size_t a = (2 * 2 + 1) * 6 + 3;
    auto stages = c.stages;
    stages["act"] = moved(stages["act"], a, 1e-3);
    const auto computed = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(computed);
    REQUIRE(computed->stage == "act");
    // The same terms handed over: the same verdict, number for number.
    const auto given = first_divergent_stage(c, stages, kF32, 1, &terms);
    REQUIRE(given);
    CHECK(given->stage == computed->stage);
    CHECK(given->worst_ratio == computed->worst_ratio);
    CHECK(given->bound == computed->bound);
    CHECK(given->per_stage == computed->per_stage);
    // Terms a million times larger: the move is within every bound, so nothing diverges; the
    // search used what it was given, not an analysis of its own.
    auto loose = terms;
    for (auto& [key, t] : loose) {
        for (std::size_t i = 0; i < t.size(); ++i) t.set(i, t.get(i) * 1e6 + 1.0);
    }
    CHECK_FALSE(first_divergent_stage(c, stages, kF32, 1, &loose));
}

TEST_CASE("judge_output names the first divergent stage of a failing output as the stage search does") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    Output out;
    out.output = moved(ref, 7, 1.0);
    out.stages = c.stages;
    const std::size_t a = (2 * 2 + 1) * 6 + 3;
    out.stages["act"] = moved(out.stages["act"], a, 1e-3);
    JudgeInput in;
    in.precision = kF32;
    const CaseResult r = judge_output(c, out, in);
    REQUIRE(r.status == Status::fail);
    REQUIRE(r.first_divergent_stage);
    const auto want = first_divergent_stage(c, out.stages, kF32, 1);
    REQUIRE(want);
    CHECK(r.first_divergent_stage->stage == want->stage);
    CHECK(r.first_divergent_stage->worst_ratio == want->worst_ratio);
    CHECK(r.first_divergent_stage->per_stage == want->per_stage);
}

TEST_CASE("judge_output: a failing output whose stages are all within bound lists them, with no divergent stage") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    Output out;
    out.output = moved(ref, 7, 1.0);  // wrong after the last stage, as a routing-weight bug is
    out.stages = c.stages;
    JudgeInput in;
    in.precision = kF32;
    CaseResult r = judge_output(c, out, in);
    REQUIRE(r.status == Status::fail);
    CHECK_FALSE(r.first_divergent_stage);
    const auto all = check_stages(c, out.stages, kF32, 1);
    CHECK_FALSE(all.first);
    CHECK(r.stages_within_bound == all.per_stage);
    REQUIRE(r.stages_within_bound.size() == 3);  // GEMM2: gate_up, act, down
    CHECK(r.stages_within_bound[0].first == "gate_up");
    CHECK(r.stages_within_bound[2].first == "down");

    // One stage out of bound: that is the divergent stage, and nothing is listed as within bound.
    out.stages["act"] = moved(out.stages["act"], (2 * 2 + 1) * 6 + 3, 1e-3);
    r = judge_output(c, out, in);
    REQUIRE(r.first_divergent_stage);
    CHECK(r.first_divergent_stage->stage == "act");
    CHECK(r.stages_within_bound.empty());

    // No stages returned: neither.
    out.stages.clear();
    r = judge_output(c, out, in);
    CHECK_FALSE(r.first_divergent_stage);
    CHECK(r.stages_within_bound.empty());
}

// Stages are compared element by element only when the output fails; a passing output's stages
// are still checked for the golden layout [T, K, features], or a harness that returns them
// transposed (or without the K axis) would pass until the day its output fails.
TEST_CASE("judge_output: a passing output with a stage not in the golden layout fails, naming the stage") {
    const auto c = make_case();
    Output out;
    out.output = c.outputs.at("output");
    out.stages = c.stages;
    JudgeInput in;
    in.precision = kF32;
    REQUIRE(judge_output(c, out, in).status == Status::pass);
    const Shape act = out.stages.at("act").shape();  // [T, K, I]
    out.stages["act"] = Tensor(out.stages.at("act").dtype(), {act[1], act[0], act[2]});  // [K, T, I]
    const CaseResult r = judge_output(c, out, in);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("stage act (shape") != std::string::npos);
    REQUIRE(r.first_divergent_stage);
    CHECK(r.first_divergent_stage->stage.rfind("act", 0) == 0);

    out.stages = c.stages;
    out.stages["gate"] = c.stages.at("act");  // a stage GEMM2 does not have
    CHECK(judge_output(c, out, in).status == Status::fail);
}

// A kernel that keeps its intermediates in bf16 but declares f32 storage fails with a divergent
// stage, which reads like an arithmetic bug: the reason says its values are all bf16 values. A
// stage that is wrong in f32 (or bf16 values where the reference's are bf16 values too) gets no
// such hint.
TEST_CASE("judge_output: a divergent stage whose returned values are all bf16 values says so") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    Output out;
    out.output = moved(ref, 7, 1.0);
    out.stages = c.stages;
    Tensor& gate_up = out.stages["gate_up"];
    for (std::size_t i = 0; i < gate_up.size(); ++i) gate_up.set(i, round_to(DType::bf16, gate_up.get(i)));
    JudgeInput in;
    in.precision = kF32;
    CaseResult r = judge_output(c, out, in);
    REQUIRE(r.first_divergent_stage);
    CHECK(r.first_divergent_stage->stage == "gate_up");
    CHECK(r.reason.find("every value of stage gate_up returned is a bf16 value, though storage f32 is declared") !=
          std::string::npos);

    // Off in f32 precision instead: the same FAIL, no hint.
    out.stages = c.stages;
    out.stages["gate_up"] = moved(c.stages.at("gate_up"), 3, 1e-3);
    r = judge_output(c, out, in);
    REQUIRE(r.first_divergent_stage);
    CHECK(r.reason.find("bf16 value") == std::string::npos);

    // Declared bf16 storage: nothing to hint (and the rounding is within its bound).
    out.stages = c.stages;
    Tensor& g = out.stages["gate_up"];
    for (std::size_t i = 0; i < g.size(); ++i) g.set(i, round_to(DType::bf16, g.get(i)));
    in.precision = Precision{DType::f32, DType::bf16};
    r = judge_output(c, out, in);
    CHECK(r.reason.find("bf16 value") == std::string::npos);
}
