// The comparison engine (conformance::compare_output, first_divergent_stage): element bounds
// formed as conformance/src/compare.cpp forms them (tolerance_model coefficients times the
// case's error terms, plus the output rounding and floor) are tested from both sides; non-finite
// values, wrong shapes, exact cases, the worst element, the cap on reported violations and the
// first divergent stage.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bundled_suite.hpp"
#include "conformance_check.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/reference/error_terms.hpp"
#include "small_cases.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::conformance;
using moe::test::bundled_case;
using moe::test::has;

namespace {

const auto G2 = ExpertType::gemm2_bias_swiglu_clamp;
const auto G3 = ExpertType::gemm3_swiglu;
const Precision kF32{DType::f32, DType::f32};

// T = 5, H = 12: 60 output elements; element i is token i / 12, feature i % 12.
golden::GoldenCase make_case(DType dtype = DType::f32, bool stages = false) {
    return test::golden_case(test::small_problem(G2, Convention::openvino, 5, 12, 6, 4, 2, dtype), stages);
}

// Output element i's bound: u_out |ref| + floor_out + sum over terms of coefficient * magnitude.
double element_bound(const golden::GoldenCase& c, const Precision& p, std::size_t i) {
    const ToleranceModel m = tolerance_model(p, c.problem.input(kHiddenStates).dtype(), validate(c.problem));
    double b = m.output_rounding * std::fabs(c.outputs.at("output").get(i)) + m.output_floor + m.routing_floor;
    for (const auto& [name, t] : output_error_terms(c, 1)) b += m.output_coefficient.at(name) * t.get(i);
    return b;
}

// Stage element i's bound: sum over the "<stage>/<term>" magnitudes of the stage coefficients.
double stage_bound(const golden::GoldenCase& c, const Precision& p, const std::string& stage, std::size_t i) {
    const ToleranceModel m = tolerance_model(p, c.problem.input(kHiddenStates).dtype(), validate(c.problem));
    double b = 0.0;
    for (const auto& [key, t] : reference::error_terms(c.problem, true, 1).stages)
        if (key.rfind(stage + "/", 0) == 0) b += m.stage_coefficient.at(key.substr(stage.size() + 1)) * t.get(i);
    return b;
}

Tensor moved(const Tensor& t, std::size_t i, double delta) {
    Tensor r = t;
    r.set(i, t.get(i) + delta);
    return r;
}

}  // namespace

TEST_CASE("the reference output passes with worst ratio 0; rounded to the data type it still passes") {
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(dt));
        const auto c = make_case(dt);
        const Tensor& ref = c.outputs.at("output");
        const Comparison r = compare_output(c, ref, kF32, 1);
        CHECK(r.status == Status::pass);
        CHECK(r.reason.empty());
        CHECK_FALSE(r.exact);
        CHECK(r.metrics.elements == 60);
        CHECK(r.metrics.over_bound == 0);
        CHECK(r.metrics.worst_ratio == 0.0);
        CHECK(r.metrics.max_abs_error == 0.0);
        CHECK(r.metrics.violations.empty());
        REQUIRE(r.metrics.worst);  // ties go to the first element
        CHECK(r.metrics.worst->token == 0);
        CHECK(r.metrics.worst->feature == 0);
        // The one rounding of each output element to the data type is within u_out |ref|.
        const Comparison rounded = compare_output(c, Tensor::from_f64(dt, ref.shape(), ref.to_f64()), kF32, 1);
        CHECK(rounded.status == Status::pass);
        CHECK(rounded.metrics.worst_ratio < 1.0);
    }
}

TEST_CASE("just inside an element's bound passes, just outside fails; the element is reported") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    const std::size_t i = 37;  // token 3, feature 1
    const double b = element_bound(c, kF32, i);
    REQUIRE(b > 0.0);
    CAPTURE(b);

    Comparison r = compare_output(c, moved(ref, i, 0.9 * b), kF32, 1);
    CHECK(r.status == Status::pass);
    CHECK(r.metrics.worst_ratio == doctest::Approx(0.9).epsilon(1e-6));
    REQUIRE(r.metrics.worst);
    CHECK(r.metrics.worst->token == 3);
    CHECK(r.metrics.worst->feature == 1);
    CHECK(r.metrics.worst->bound == doctest::Approx(b).epsilon(1e-12));
    CHECK(r.metrics.max_abs_error == doctest::Approx(0.9 * b).epsilon(1e-6));

    for (double sign : {1.0, -1.0}) {
        CAPTURE(sign);
        r = compare_output(c, moved(ref, i, sign * 1.1 * b), kF32, 1);
        CHECK(r.status == Status::fail);
        CHECK(r.metrics.over_bound == 1);
        CHECK(r.metrics.worst_ratio == doctest::Approx(1.1).epsilon(1e-6));
        REQUIRE(r.metrics.violations.size() == 1);
        CHECK(r.metrics.violations[0].token == 3);
        CHECK(r.metrics.violations[0].feature == 1);
        CHECK(r.metrics.violations[0].reference == ref.get(i));
        CHECK(r.metrics.violations[0].got == ref.get(i) + sign * 1.1 * b);
        CHECK(has(r.reason, "1 of 60 elements outside their bound"));
    }
    // Just past the bound (1 + 1e-6 of it): the reason never reads "worst 1 x bound".
    r = compare_output(c, moved(ref, i, (1 + 1e-6) * b), kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(has(r.reason, "worst 1.000001 x bound"));
    // A backend declaring a narrower intermediate type gets a wider bound: the same error passes.
    CHECK(element_bound(c, {DType::f32, DType::bf16}, i) > 1.1 * b);
    CHECK(compare_output(c, moved(ref, i, 1.1 * b), {DType::f32, DType::bf16}, 1).status == Status::pass);
}

TEST_CASE("the bounds come from the case's /outputs/bound_<term>, or from the reference when absent") {
    auto c = make_case();
    const auto from_file = output_error_terms(c, 1);
    REQUIRE(from_file.size() == reference::error_term_names().size());
    golden::GoldenCase bare = c;
    for (const auto& name : reference::error_term_names()) bare.outputs.erase("bound_" + name);
    const auto computed = output_error_terms(bare, 1);
    for (const auto& [name, t] : from_file) {
        CAPTURE(name);
        CHECK(computed.at(name) == t);
    }
    // Doubling the file's magnitudes doubles the error-term part of the bound.
    const std::size_t i = 20;
    const double b = element_bound(c, kF32, i);
    for (const auto& name : reference::error_term_names()) {
        Tensor& t = c.outputs.at("bound_" + name);
        for (std::size_t k = 0; k < t.size(); ++k) t.set(k, 2.0 * t.get(k));
    }
    CHECK(element_bound(c, kF32, i) > 1.5 * b);
    CHECK(compare_output(c, moved(c.outputs.at("output"), i, 1.1 * b), kF32, 1).status == Status::pass);
}

TEST_CASE("NaN or Inf where the reference is finite fails") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    for (double bad : {NAN, INFINITY, -INFINITY}) {
        CAPTURE(bad);
        Tensor got = ref;
        got.set(14, bad);  // token 1, feature 2
        const Comparison r = compare_output(c, got, kF32, 1);
        CHECK(r.status == Status::fail);
        CHECK(r.metrics.over_bound == 1);
        CHECK(std::isinf(r.metrics.worst_ratio));
        // The maxima say so too: an all-NaN output once read "max abs error 0".
        CHECK(std::isinf(r.metrics.max_abs_error));
        CHECK(std::isinf(r.metrics.max_rel_error));
        CHECK(std::isinf(r.metrics.max_ulps));
        REQUIRE(r.metrics.worst);
        CHECK(r.metrics.worst->token == 1);
        CHECK(r.metrics.worst->feature == 2);
    }
}

TEST_CASE("a finite reference beyond the data type's range: the infinity of its sign passes, nothing else") {
    // The op's output is the reference rounded to the data type: past its largest value (f16:
    // 65520 and up) that is an infinity, which every correct backend returns.
    auto c = make_case(DType::f16);
    c.outputs.at("output").set(14, -70000.0);  // token 1, feature 2; its stored output is f64
    Tensor ref = c.outputs.at("output");
    const Precision f32_compute{DType::f32, DType::f32};
    const auto verdict = [&](double value) {
        Tensor got(DType::f16, ref.shape());
        for (std::size_t i = 0; i < ref.size(); ++i) got.set(i, ref.get(i));
        got.set(14, value);
        return compare_output(c, got, f32_compute, 1);
    };
    const Comparison right = verdict(-INFINITY);
    CHECK(right.status != Status::fail);
    CHECK(right.metrics.over_bound == 0);
    for (double wrong : {double(INFINITY), double(NAN), -65504.0}) {
        CAPTURE(wrong);
        const Comparison r = verdict(wrong);
        CHECK(r.status == Status::fail);
        CHECK(r.metrics.over_bound == 1);
    }
}

TEST_CASE("a wrong shape fails before any element is compared") {
    const auto c = make_case();
    Comparison r = compare_output(c, Tensor(DType::f32, {5, 13}), kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(r.reason == "output shape [5, 13] differs from hidden_states' [5, 12]");
    CHECK(r.metrics.elements == 0);
    // Same element count, other rank.
    const Tensor& ref = c.outputs.at("output");
    r = compare_output(c, Tensor::from_f64(DType::f32, {1, 5, 12}, ref.to_f64()), kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(has(r.reason, "output shape [1, 5, 12]"));
}

namespace {

// Exact by construction (catalogue cases exact_*): dyadic values, power-of-two routing weights,
// swish beta 0; build_golden certifies it. T = 6, H = 16.
golden::GoldenCase exact_case(DType dtype) {
    generator::CaseSpec s = test::small_spec(G3, Convention::openvino, 6, 16, 8, 4, 2, dtype);
    s.attributes = attributes_for(G3, Convention::openvino, 0.0, 0.0);
    auto dyadic = [](std::int64_t range, int bits) {
        generator::Fill f;
        f.kind = generator::Fill::Kind::dyadic;
        f.range = range;
        f.bits = bits;
        return f;
    };
    s.fills = {{kHiddenStates, dyadic(4, 2)}, {kWeight0, dyadic(4, 3)}, {kWeight1, dyadic(4, 3)}, {kWeight2, dyadic(2, 3)}};
    s.routing.weights = generator::RoutingSpec::Weights::dyadic;
    s.exact = true;
    return generator::build_golden(s, {});
}

}  // namespace

TEST_CASE("an exact case demands the reference rounded to the data type, or itself in a wider output, bit for bit") {
    const golden::GoldenCase c = exact_case(DType::f32);
    REQUIRE(c.exact);
    const Tensor& ref = c.outputs.at("output");
    const Tensor f32 = Tensor::from_f64(DType::f32, ref.shape(), ref.to_f64());

    Comparison r = compare_output(c, f32, kF32, 1);
    CHECK(r.exact);
    CHECK(r.status == Status::pass);
    CHECK(r.metrics.worst_ratio == 0.0);

    // One f32 ulp off at the largest element: far inside the rounding tolerance, still a FAIL.
    std::size_t i = 0;
    for (std::size_t k = 0; k < ref.size(); ++k)
        if (std::fabs(ref.get(k)) > std::fabs(ref.get(i))) i = k;
    REQUIRE(ref.get(i) != 0.0);
    Tensor off = f32;
    off.set(i, static_cast<double>(std::nextafter(static_cast<float>(ref.get(i)), INFINITY)));
    r = compare_output(c, off, kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(r.metrics.over_bound == 1);
    CHECK(std::isinf(r.metrics.worst_ratio));
    REQUIRE(r.metrics.violations.size() == 1);
    CHECK(r.metrics.violations[0].bound == 0.0);
    CHECK(r.metrics.violations[0].token * 16 + r.metrics.violations[0].feature == i);
    // The same output under the ordinary bounds: not exact, and it passes.
    golden::GoldenCase inexact = c;
    inexact.exact = false;
    CHECK(compare_output(inexact, off, kF32, 1).status == Status::pass);
    // A backend keeping bf16 intermediates is outside the certificate: compared with bounds.
    r = compare_output(c, off, {DType::f32, DType::bf16}, 1);
    CHECK_FALSE(r.exact);
    CHECK(r.status == Status::pass);

    // f16 data: in an f16 output the f32-exact output rounded to f16 is the one answer; in a wider
    // output (an f32 output declared for f16 data) the unrounded value is exact too, so it passes
    // as well; a value that is neither (the rounding moved by one f16 ulp) fails.
    const golden::GoldenCase h = exact_case(DType::f16);
    const Tensor& href = h.outputs.at("output");
    std::size_t unrepresentable = 0;
    for (std::size_t k = 0; k < href.size(); ++k) unrepresentable += round_to(DType::f16, href.get(k)) != href.get(k);
    REQUIRE(unrepresentable > 0);
    r = compare_output(h, Tensor::from_f64(DType::f16, href.shape(), href.to_f64()), kF32, 1);
    CHECK(r.exact);
    CHECK(r.status == Status::pass);
    r = compare_output(h, Tensor::from_f64(DType::f32, href.shape(), href.to_f64()), kF32, 1);
    CHECK(r.status == Status::pass);
    Tensor moved = Tensor::from_f64(DType::f32, href.shape(), href.to_f64());
    std::size_t changed = 0;
    for (std::size_t k = 0; k < href.size(); ++k) {
        const double v = href.get(k), rounded = round_to(DType::f16, v);
        if (rounded == v) continue;
        // Past v on the side away from its rounding, by twice the rounding's distance (at least
        // two f32 ulps): neither v nor its correct rounding.
        moved.set(k, v + 2 * (v - rounded));
        ++changed;
    }
    r = compare_output(h, moved, kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(r.metrics.over_bound == changed);
}

// The underflow floor (spec/tolerance.md, "Underflow") is added only to a comparison that fails
// without it, which then runs again: an error past the ordinary bound by less than the floor
// passes, one past bound + floor fails. f16 compute: half of f16's smallest subnormal per rounding
// is 2^-25, a floor of about 1e-6 on values near 1, which a double output resolves exactly.
TEST_CASE("an error past its bound by less than the underflow floor passes on the retry; past the floor fails") {
    const auto c = make_case();
    const Precision f16{DType::f16, DType::f16};
    const Tensor& ref = c.outputs.at("output");
    const std::vector<double> floor = underflow_floor(c.problem, f16, validate(c.problem));
    const std::size_t i = 12 * 3 + 7;
    REQUIRE(floor[i] > 1e-7);
    const double bound = element_bound(c, f16, i);
    REQUIRE(bound > 0.0);
    const auto with_error = [&](double e) {
        std::vector<double> v(ref.size());
        for (std::size_t j = 0; j < v.size(); ++j) v[j] = ref.get(j);
        v[i] += e;
        return Tensor::from_f64(DType::f64, ref.shape(), v);
    };
    const Comparison inside = compare_output(c, with_error(bound + 0.5 * floor[i]), f16, 1);
    CHECK(inside.status == Status::pass);
    CHECK(inside.metrics.worst_ratio < 1.0);
    const Comparison past = compare_output(c, with_error(bound + 2.0 * floor[i]), f16, 1);
    CHECK(past.status == Status::fail);
    CHECK(past.metrics.over_bound == 1);
    REQUIRE(past.metrics.worst);
    CHECK(past.metrics.worst->bound == doctest::Approx(bound + floor[i]).epsilon(1e-12));
}

TEST_CASE("the worst element is the largest error relative to its own bound") {
    const auto c = make_case();
    const Tensor& ref = c.outputs.at("output");
    const std::size_t a = 5, b = 50;  // token 0 feature 5; token 4 feature 2
    Tensor got = moved(ref, a, 0.5 * element_bound(c, kF32, a));
    got = moved(got, b, -0.8 * element_bound(c, kF32, b));
    const Comparison r = compare_output(c, got, kF32, 1);
    CHECK(r.status == Status::pass);
    CHECK(r.metrics.worst_ratio == doctest::Approx(0.8).epsilon(1e-6));
    REQUIRE(r.metrics.worst);
    CHECK(r.metrics.worst->token == 4);
    CHECK(r.metrics.worst->feature == 2);
}

TEST_CASE("at most 10 violations are listed, in index order; all are counted") {
    const auto c = make_case();
    Tensor got = c.outputs.at("output");
    for (std::size_t i = 0; i < 60; i += 4) got = moved(got, i, 3.0 * element_bound(c, kF32, i));
    const Comparison r = compare_output(c, got, kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(r.metrics.over_bound == 15);
    REQUIRE(r.metrics.violations.size() == 10);
    for (std::size_t j = 0; j < 10; ++j) CHECK(r.metrics.violations[j].token * 12 + r.metrics.violations[j].feature == 4 * j);
    CHECK(has(r.reason, "15 of 60 elements outside their bound (25.00%)"));
}

TEST_CASE("non-finite data: either reading's class is accepted; a finite value must be within bound") {
    // Expert 3 is used by no token and its down weight holds an Inf: the sparse reading is
    // finite, the dense one (0 * Inf) has NaN at feature 5 of every token.
    auto s = test::small_spec(G3, Convention::openvino, 4, 8, 4, 4, 1);
    s.routing.exclude = {3};
    s.overrides.push_back({kWeight2, {3, 5, 1}, INFINITY});
    const auto c = test::golden_case(generator::synthesize(s));
    REQUIRE(c.outputs.count("output_dense") == 1);
    const Tensor &sparse = c.outputs.at("output"), &dense = c.outputs.at("output_dense");
    REQUIRE(std::isnan(dense.get(5)));
    CHECK(compare_output(c, sparse, kF32, 1).status == Status::pass);
    CHECK(compare_output(c, dense, kF32, 1).status == Status::pass);
    Tensor inf = sparse;
    inf.set(5, INFINITY);  // neither reading's class
    CHECK(compare_output(c, inf, kF32, 1).status == Status::fail);
    // Finite where the sparse reading is finite, but outside the bound.
    CHECK(compare_output(c, moved(sparse, 5, 1.1 * element_bound(c, kF32, 5)), kF32, 1).status == Status::fail);
    CHECK(compare_output(c, moved(sparse, 5, 0.9 * element_bound(c, kF32, 5)), kF32, 1).status == Status::pass);
}

TEST_CASE("an infinite reference: that infinity passes; NaN or the other infinity fails") {
    // One expert, one slot, and an Inf in its down weight at feature 5: each token's feature 5 is
    // an infinity (sign: its activation's times its routing weight's). With every expert routed
    // the dense reading is the same (an unrouted expert's 0 * Inf would make it NaN, which the
    // dense convention accepts).
    auto s = test::small_spec(G3, Convention::openvino, 4, 8, 4, 1, 1);
    s.overrides.push_back({kWeight2, {0, 5, 1}, INFINITY});
    const auto c = test::golden_case(generator::synthesize(s));
    const Tensor& ref = c.outputs.at("output");
    CHECK(compare_output(c, ref, kF32, 1).status == Status::pass);
    for (std::size_t t = 0; t < 4; ++t) {
        CAPTURE(t);
        const std::size_t i = t * 8 + 5;
        REQUIRE(std::isinf(ref.get(i)));
        if (c.outputs.count("output_dense")) REQUIRE(c.outputs.at("output_dense").get(i) == ref.get(i));
        Tensor nan = ref, flipped = ref;
        nan.set(i, NAN);
        flipped.set(i, -ref.get(i));
        CHECK(compare_output(c, nan, kF32, 1).status == Status::fail);
        CHECK(compare_output(c, flipped, kF32, 1).status == Status::fail);
    }
}

TEST_CASE("a finite sparse reading beyond the data type's range where the dense one is NaN: its infinity passes") {
    // Found by a random-case soak: the f64 reference, whose output rounded to bf16 is -inf, failed
    // a case whose unused expert held a NaN scale, while the f32 backends' NaN matched the dense
    // reading. Feature 5 here: dense NaN (an Inf weight in an expert no token uses), sparse
    // -70000, past f16's largest value.
    auto s = test::small_spec(G3, Convention::openvino, 4, 8, 4, 4, 1, DType::f16);
    s.routing.exclude = {3};
    s.overrides.push_back({kWeight2, {3, 5, 1}, INFINITY});
    auto c = test::golden_case(generator::synthesize(s));
    REQUIRE(c.outputs.count("output_dense") == 1);
    REQUIRE(std::isnan(c.outputs.at("output_dense").get(5)));
    c.outputs.at("output").set(5, -70000.0);
    const Tensor& ref = c.outputs.at("output");
    const Precision f32_compute{DType::f32, DType::f32};
    const auto verdict = [&](double value) {
        Tensor got(DType::f16, ref.shape());
        for (std::size_t i = 0; i < ref.size(); ++i) got.set(i, std::isfinite(ref.get(i)) ? ref.get(i) : 0.0);
        got.set(5, value);
        return compare_output(c, got, f32_compute, 1);
    };
    for (double right : {-double(INFINITY), double(NAN)}) {  // the sparse reading rounded, the dense one
        CAPTURE(right);
        const Comparison r = verdict(right);
        CHECK(r.status == Status::pass);
        CHECK(r.metrics.over_bound == 0);
    }
    for (double wrong : {double(INFINITY), -65504.0}) {
        CAPTURE(wrong);
        const Comparison r = verdict(wrong);
        CHECK(r.status == Status::fail);
        CHECK(r.metrics.over_bound == 1);
    }
}

TEST_CASE("a vacuous case (output mostly zero) is MISTRUSTED, not PASS") {
    Problem p = test::small_problem(G3, Convention::openvino);
    Tensor& w = p.inputs[kRoutingWeights];
    for (std::size_t i = 0; i < w.size(); ++i) w.set(i, 0.0);
    const auto c = test::golden_case(p);
    const Comparison r = compare_output(c, c.outputs.at("output"), kF32, 1);
    CHECK(r.status == Status::mistrusted);
    CHECK(has(r.reason, "60 of 60 reference elements are zero"));
}

TEST_CASE("a case whose output is mostly NaN or Inf is MISTRUSTED; a few non-finite elements are not") {
    Problem p = test::small_problem(G3, Convention::openvino);
    Tensor& x = p.inputs[kHiddenStates];
    for (std::size_t i = 0; i < x.size(); ++i) x.set(i, NAN);  // every output element NaN
    const auto c = test::golden_case(p);
    const Comparison r = compare_output(c, c.outputs.at("output"), kF32, 1);
    CHECK(r.status == Status::mistrusted);
    CHECK(has(r.reason, "60 of 60 reference elements are zero or not finite (0 zero, 60 NaN or Inf)"));
    // Two tokens of five NaN (24 of 60): still a test of the other three.
    Problem q = test::small_problem(G3, Convention::openvino);
    Tensor& y = q.inputs[kHiddenStates];
    const std::size_t H = y.shape().back();
    for (std::size_t i = 0; i < 2 * H; ++i) y.set(i, NAN);
    const auto d = test::golden_case(q);
    CHECK(compare_output(d, d.outputs.at("output"), kF32, 1).status == Status::pass);
}

TEST_CASE("an output of NaN everywhere, accepted as the dense reading's, is MISTRUSTED, not PASS") {
    // A NaN in the gate lane of a weight row that the clamp drops in the sparse reading: the dense
    // reading (0 x NaN) is NaN everywhere, so an all-NaN output matches it whatever else it got wrong.
    const auto c = golden::read_golden(bundled_case("nonfinite_gate_lane_nan_f32.h5"), false);
    REQUIRE(c.outputs.count("output_dense") == 1);
    const Tensor& dense = c.outputs.at("output_dense");
    std::size_t nan = 0;
    for (std::size_t i = 0; i < dense.size(); ++i) nan += std::isnan(dense.get(i));
    REQUIRE(nan == dense.size());
    CHECK(compare_output(c, c.outputs.at("output"), kF32, 1).status == Status::pass);  // the sparse reading
    const Comparison d = compare_output(c, dense, kF32, 1);
    CHECK(d.status == Status::mistrusted);
    CHECK(has(d.reason, "96 of 96 of its elements are zero or not finite (0 zero, 96 NaN or Inf)"));
    Tensor all_nan = c.outputs.at("output");
    for (std::size_t i = 0; i < all_nan.size(); ++i) all_nan.set(i, NAN);
    CHECK(compare_output(c, all_nan, kF32, 1).status == Status::mistrusted);
}

TEST_CASE("first_divergent_stage names the first stage, in pipeline order, that leaves its bounds") {
    const auto c = make_case(DType::f32, true);
    REQUIRE(c.stages.size() == 3);  // gate_up, act, down
    CHECK_FALSE(first_divergent_stage(c, c.stages, kF32, 1));
    // act [T = 5, K = 2, I = 6]: element (token 2, slot 1, feature 3).
    const std::size_t a = (2 * 2 + 1) * 6 + 3, d = 7, g = 40;
    const double ab = stage_bound(c, kF32, "act", a);
    REQUIRE(ab > 0.0);
    auto stages = c.stages;
    stages["act"] = moved(stages["act"], a, 0.5 * ab);
    CHECK_FALSE(first_divergent_stage(c, stages, kF32, 1));  // within its bound

    stages["down"] = moved(stages["down"], d, 4.0 * stage_bound(c, kF32, "down", d) + 1e-3);
    auto s = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(s);
    CHECK(s->stage == "down");

    stages["act"] = moved(c.stages.at("act"), a, 3.0 * ab);
    s = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(s);
    CHECK(s->stage == "act");
    CHECK(s->token == 2);
    CHECK(s->slot == 1);
    CHECK(s->feature == 3);
    CHECK(s->worst_ratio == doctest::Approx(3.0).epsilon(1e-6));
    CHECK(s->bound == doctest::Approx(ab).epsilon(1e-12));

    stages["gate_up"] = moved(stages["gate_up"], g, 1.0);
    s = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(s);
    CHECK(s->stage == "gate_up");
    // A stage the backend does not return is not judged; a wrong shape is named.
    stages.erase("gate_up");
    CHECK(first_divergent_stage(c, stages, kF32, 1)->stage == "act");
    stages["gate_up"] = Tensor(DType::f32, {5, 2, 11});
    s = first_divergent_stage(c, stages, kF32, 1);
    REQUIRE(s);
    CHECK(s->stage == "gate_up (shape [5, 2, 11], expected [5, 2, 12])");
    CHECK(std::isinf(s->worst_ratio));
}
