// The shrink library (tools/shrink) against scripted oracles: the problem edits keep a valid
// problem and compute what the op computes on the kept part; delta debugging finds a minimal
// subset; a shrink keeps the failure's kind and stage, and refuses a case that does not fail.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "bundled_suite.hpp"
#include "conformance_check.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/shrink/shrink.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "ddmin.hpp"
#include "small_cases.hpp"

using namespace moe;
using namespace moe::shrink;
using moe::conformance::Status;
using moe::test::bundled_case;

namespace {

Tensor reference_output(const Problem& p) { return reference::run(p, {reference::Mode::sparse, false, 1}).output; }

// Every expert type, convention (layouts NK/KN, routing compact/dense) and hidden rank.
std::vector<Problem> problems() {
    std::vector<Problem> out;
    for (ExpertType type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (Convention conv : {Convention::openvino, Convention::spec}) {
            out.push_back(test::small_problem(type, conv, 6, 10, 5, 5, 2));
            auto spec = test::small_spec(type, conv, 6, 10, 5, 5, 2);
            spec.rank3 = true;
            spec.batch = 2;
            spec.seq = 3;
            out.push_back(generator::synthesize(spec));
        }
    return out;
}

// The reference's output on the kept tokens, row by row.
void check_rows(const Tensor& full, const Tensor& part, const Keep& rows, std::size_t H) {
    REQUIRE(part.size() == rows.size() * H);
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t h = 0; h < H; ++h) CHECK(part.get(i * H + h) == full.get(rows[i] * H + h));
}

}  // namespace

TEST_CASE("problem edits: valid problems that compute the op on what they keep") {
    for (const Problem& p : problems()) {
        CAPTURE(p.attributes.convention);
        CAPTURE(p.input(kHiddenStates).rank());
        const Dims d = validate(p);
        const Tensor full = reference_output(p);
        // Tokens: the kept tokens' rows, exactly.
        const Problem t = keep_tokens(p, {1, 4});
        CHECK(validate(t).T == 2);
        check_rows(full, reference_output(t), {1, 4}, d.H);
        // The unused experts dropped (indices renumbered): the same output.
        const Problem e = keep_experts(keep_tokens(p, {0}), used_experts(keep_tokens(p, {0})));
        CHECK(validate(e).E == 2);
        check_rows(full, reference_output(e), {0}, d.H);
        // Flattened [B, S, H]: the same output.
        if (p.input(kHiddenStates).rank() == 3) CHECK(reference_output(flatten_tokens(p)).to_f64() == full.to_f64());
        // One slot: the output of that slot's expert alone (compare with slot 0 only).
        const Problem s = keep_slots(p, {0});
        CHECK(validate(s).K == 1);
        // Features: smaller sizes, still valid.
        CHECK(validate(keep_hidden(p, {0, 3, 9})).H == 3);
        CHECK(validate(keep_inter(p, {2})).I == 1);
        // Values.
        CHECK(nonzero_elements(zero_elements(p, kWeight0, nonzero_elements(p, kWeight0)), kWeight0).empty());
        const Tensor two = powers_of_two(p, kHiddenStates).input(kHiddenStates);
        for (std::size_t i = 0; i < two.size(); ++i) {
            int exp;
            if (two.get(i) != 0.0) CHECK(std::frexp(std::fabs(two.get(i)), &exp) == 0.5);
        }
    }
}

TEST_CASE("keep_slots with K = 2 -> 1: the kept slot's weighted expert output alone") {
    const Problem p = test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 4, 8, 4, 4, 2);
    const Problem one = keep_slots(p, {1});
    // Compared with the same problem whose slot-0 weights are zero: identical outputs.
    Problem zeroed = p;
    for (std::size_t t = 0; t < 4; ++t) zeroed.inputs[kRoutingWeights].set(t * 2, 0.0);
    CHECK(reference_output(one).to_f64() == reference_output(zeroed).to_f64());
}

TEST_CASE("ddmin: the minimal subset that still fails") {
    std::vector<std::size_t> items(40);
    for (std::size_t i = 0; i < 40; ++i) items[i] = i;
    std::size_t tests = 0;
    const auto kept = ddmin(items, [&](const std::vector<std::size_t>& k) {
        ++tests;
        const std::set<std::size_t> s(k.begin(), k.end());
        return s.count(3) && s.count(37);
    });
    CHECK(kept == std::vector<std::size_t>{3, 37});
    CHECK(tests < 60);

    // A spent budget ends the search at once: no further candidate is even built (a million
    // items, each candidate refused, would otherwise walk every level down to single items).
    std::vector<std::size_t> many(1000000);
    for (std::size_t i = 0; i < many.size(); ++i) many[i] = i;
    std::size_t asked = 0;
    const auto all = ddmin(
        many, [&](const std::vector<std::size_t>&) { return ++asked, false; }, 0, [&] { return asked >= 5; });
    CHECK(all.size() == many.size());
    CHECK(asked == 5);
}

TEST_CASE("shrink_case: a backend that fails everything shrinks to one token, slot, expert and feature") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, 7, 12, 6, 5, 2), true);
    std::size_t calls = 0;
    const Oracle always = [&](const golden::GoldenCase&) {
        ++calls;
        return Verdict{Status::fail, "act", "planted"};
    };
    const Result r = shrink_case(c, always);
    CHECK(r.after.T == 1);
    CHECK(r.after.K == 1);
    CHECK(r.after.E == 1);
    CHECK(r.after.H == 1);
    CHECK(r.after.I == 1);
    // Biases dropped and values zeroed, as far as the output stays non-zero (a vacuous case is
    // never kept: it would prove nothing).
    CHECK(r.after.nonzero_values <= 4);
    CHECK_FALSE(conformance::vacuous_case(r.shrunk));
    CHECK(r.runs == calls);
    CHECK(r.verdict.stage == "act");
    CHECK_FALSE(r.edits.empty());
    // The shrunk case is a golden case of its own: outputs, stages and bounds recomputed.
    CHECK(r.shrunk.outputs.count("output"));
    CHECK(r.shrunk.outputs.count("bound_first_acc"));
    CHECK(r.shrunk.stages.count("gate_up"));
}

TEST_CASE("shrink_case keeps the failure's kind: a different stage or an ERROR is not the same failure") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 6, 8, 4, 4, 2), true);
    // Fails at stage "gate" while token count > 2; below that, a different stage.
    const Oracle oracle = [](const golden::GoldenCase& g) {
        return validate(g.problem).T > 2 ? Verdict{Status::fail, "gate", ""} : Verdict{Status::fail, "down", ""};
    };
    CHECK(shrink_case(c, oracle).after.T == 3);
    CHECK(same_failure({Status::error, "", "backend threw: bad size 12"}, {Status::error, "", "backend threw: bad size 3"}));
    CHECK_FALSE(same_failure({Status::error, "", "backend threw: x"}, {Status::fail, "", ""}));
    CHECK_FALSE(same_failure({Status::fail, "gate", ""}, {Status::fail, "", ""}));
    // A case that passes has nothing to shrink.
    const Oracle passes = [](const golden::GoldenCase&) { return Verdict{Status::pass, "", ""}; };
    CHECK_THROWS_AS(shrink_case(c, passes), InputError);
}

TEST_CASE("rebuild_case: exact stays exact only while the certificate holds") {
    auto spec = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 4, 8, 4, 4, 2);
    spec.attributes = attributes_for(ExpertType::gemm3_swiglu, Convention::openvino, 0.0, 0.0);
    generator::Fill unit;
    unit.kind = generator::Fill::Kind::dyadic;
    unit.range = 1;
    for (const char* n : {kHiddenStates, kWeight0, kWeight1, kWeight2}) spec.fills[n] = unit;
    spec.routing.weights = generator::RoutingSpec::Weights::dyadic;
    golden::GoldenCase exact = test::golden_case(generator::synthesize(spec), true);
    exact.exact = true;
    CHECK(rebuild_case(keep_tokens(exact.problem, {0, 2}), exact, 1).exact);
    Problem inexact = exact.problem;
    inexact.inputs[kHiddenStates].set(0, 0.1);  // not on a short dyadic grid
    CHECK_FALSE(rebuild_case(inexact, exact, 1).exact);
}

namespace {

// Fails every case at stage "gate_up" (or "gate"), whatever it holds.
Verdict always_fails(const golden::GoldenCase& g) {
    return {Status::fail, g.problem.attributes.expert_type == ExpertType::gemm3_swiglu ? "gate" : "gate_up", "planted"};
}

}  // namespace

golden::GoldenCase bundled(const std::string& name) {
    return golden::read_golden(bundled_case(name + ".h5"));
}

TEST_CASE("keep_hidden and keep_inter on compressed weights: whole groups, with their scales and zero points") {
    const Problem p = bundled("compressed_u8_gemm2_group4_zp").problem;  // H = I = 16, groups of 4
    REQUIRE(weight_compression(p, kWeight0)->group_size == 4);
    CHECK(hidden_unit(p) == 4);
    CHECK(inter_unit(p) == 4);
    // A split group is no edit; whole groups take their scale and zero point columns along.
    CHECK(keep_hidden(p, {0, 1, 2}).inputs == p.inputs);
    const Problem q = keep_hidden(p, {4, 5, 6, 7, 12, 13, 14, 15});
    CHECK(validate(q).H == 8);
    CHECK(q.input(scale_input(kWeight0)).shape()[2] == 2);
    CHECK(q.input(zero_point_input(kWeight0)).shape()[2] == 2);
    // Expert 0, row 0: groups 1 and 3 are now 0 and 1.
    CHECK(q.input(scale_input(kWeight0)).get(0) == p.input(scale_input(kWeight0)).get(1));
    CHECK(q.input(scale_input(kWeight0)).get(1) == p.input(scale_input(kWeight0)).get(3));
    CHECK(validate(keep_inter(p, {0, 1, 2, 3})).I == 4);
    // MXFP4 per channel is one block of 32: nothing to drop.
    const Problem mx = bundled("compressed_mxfp4_gemm2_f32").problem;
    CHECK(hidden_unit(mx) == 32);
    // A 4-bit weight per channel keeps an even K.
    CHECK(hidden_unit(bundled("compressed_i4_gemm2_channel_nozp").problem) == 2);
}

TEST_CASE("shrink_case on compressed weights: H and I shrink by whole groups, and the search ends by itself") {
    // keep_hidden and keep_inter left a compressed problem as it was; that "edit" still failed,
    // so it was kept, every pass changed something and the search ran to its limit of 3000 runs
    // with H and I as they were.
    const Result r = shrink_case(bundled("compressed_u8_gemm2_group4_nozp"), always_fails);
    CAPTURE(r.runs);
    CHECK(r.limit.empty());
    CHECK(r.runs < 300);
    CHECK(r.after.H == 1);  // 16 -> 4 (one group) -> 1 (per channel)
    CHECK(r.after.I == 1);
    CHECK(r.shrunk.problem.input(kWeight0).dtype() == DType::u8);
    // MXFP4's blocks of 32 stay whole.
    const Result mx = shrink_case(bundled("compressed_mxfp4_gemm2_f32"), always_fails);
    CHECK(mx.limit.empty());
    CHECK(mx.runs < 300);
    CHECK(mx.after.H == 32);
    CHECK(mx.after.I == 32);
}

TEST_CASE("shrink_case drops the unused experts one chunk at a time when the failure needs some of them") {
    // An expert-parallel mapping that fails only while E > 8 devices: dropping every unused
    // expert at once passes, so E stayed 12; delta debugging over them gets to 9.
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 6, 8, 4, 12, 2), true);
    const Oracle oracle = [](const golden::GoldenCase& g) {
        return validate(g.problem).E > 8 ? Verdict{Status::fail, "", "planted"} : Verdict{Status::pass, "", ""};
    };
    const Result r = shrink_case(c, oracle);
    CHECK(r.after.T == 1);
    CHECK(r.after.E == 9);
    CHECK(r.limit.empty());
}

TEST_CASE("shrink_case says when its budget, not the search, ended it") {
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, 7, 12, 6, 5, 2), true);
    Options few;
    few.max_runs = 3;
    CHECK(shrink_case(c, always_fails, few).limit == "its limit of 3 runs");
    Options brief;
    brief.max_seconds = 1e-9;
    CHECK(shrink_case(c, always_fails, brief).limit == "its time limit of 1e-09 s");
    CHECK(shrink_case(c, always_fails).limit.empty());
}

namespace {

// A backend that computes the reference output, then misbehaves as `run` would notice.
class Misbehaving : public Backend {
public:
    enum class Kind { misshapen_stage, writes_inputs };
    explicit Misbehaving(Kind k) : kind_(k) {}
    std::string name() const override { return "misbehaving"; }
    std::string description() const override { return ""; }
    Support supports(const Problem&) const override { return {}; }
    Precision precision(DType) const override { return {DType::f64, DType::f64}; }
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool) override {
        Output out;
        out.output = reference_output(p);
        if (kind_ == Kind::misshapen_stage) out.stages["gate"] = Tensor(DType::f32, {1});
        if (kind_ == Kind::writes_inputs) const_cast<Problem&>(p).inputs[kHiddenStates].set(0, 1.5);
        return out;
    }

private:
    Kind kind_;
};

}  // namespace

TEST_CASE("make_backend_oracle judges as moe-conform run does: a misshapen stage fails, writing inputs is an error") {
    // Comparing the output alone called both PASS, so a shrink could keep a candidate that run fails
    // another way (or refuse the case run fails).
    const auto c = test::golden_case(test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 3, 8, 4, 4, 2), true);
    Misbehaving stage(Misbehaving::Kind::misshapen_stage);
    const Verdict v = make_backend_oracle(stage, 1)(c);
    CAPTURE(v.reason);
    CHECK(v.status == Status::fail);
    CHECK(v.stage.rfind("gate (shape", 0) == 0);
    Misbehaving writer(Misbehaving::Kind::writes_inputs);
    golden::GoldenCase copy = c;
    const Verdict w = make_backend_oracle(writer, 1)(copy);
    CHECK(w.status == Status::error);
    CHECK(w.reason.find("wrote into its inputs") != std::string::npos);
}
