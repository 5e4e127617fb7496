// Outputs that a comparison once passed though they are wrong, on bundled cases: each is shown
// with the check that now stops it, next to the correct output (or declaration) it still passes.
// An exact case's output in a narrower type; a declared type whose range cannot hold the case
// (the underflow floor grew with the out-of-range values); bounds of at least |ref| under a
// declared bf16 accumulation; an infinite bound on a finite reference; swish's beta past the
// compute type's range.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include "bundled_suite.hpp"
#include "conformance_check.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/conformance/tolerance.hpp"
#include "moe/golden/golden_file.hpp"
#include "small_cases.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::conformance;
using moe::test::bundled_case;
using moe::test::has;

namespace {

const Precision kF32{DType::f32, DType::f32};

golden::GoldenCase bundled(const std::string& name) {
    return golden::read_golden(bundled_case(name + ".h5"), false);
}

// The reference output, changed element by element, stored in type t.
Tensor output_as(const golden::GoldenCase& c, DType t, const std::function<double(double)>& f = {}) {
    const Tensor& ref = c.outputs.at("output");
    Tensor out(t, ref.shape());
    for (std::size_t i = 0; i < ref.size(); ++i) out.set(i, f ? f(ref.get(i)) : ref.get(i));
    return out;
}

}  // namespace

TEST_CASE("an exact case's output in a type narrower than the data type is the reference rounded once more: FAIL") {
    const golden::GoldenCase c = bundled("exact_gemm3_openvino_f32");
    REQUIRE(c.exact);
    // f16 and bf16 outputs of the f32 case's reference (relative errors 4.8e-4 and 3.8e-3) once
    // passed as "the reference rounded to the output's type".
    for (const DType narrow : {DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(narrow));
        const Comparison r = compare_output(c, output_as(c, narrow), kF32, 1);
        CHECK(r.status == Status::fail);
        CHECK(r.metrics.over_bound > 0);
    }
    for (const DType wide : {DType::f32, DType::f64}) CHECK(compare_output(c, output_as(c, wide), kF32, 1).status == Status::pass);
    // f16 data: a bf16 output holds fewer bits (FAIL); f16 and f32 outputs pass.
    const golden::GoldenCase h = bundled("exact_gemm2_openvino_f16");
    REQUIRE(h.exact);
    CHECK(compare_output(h, output_as(h, DType::bf16), kF32, 1).status == Status::fail);
    CHECK(compare_output(h, output_as(h, DType::f16), kF32, 1).status == Status::pass);
    CHECK(compare_output(h, output_as(h, DType::f32), kF32, 1).status == Status::pass);
}

TEST_CASE("a failing comparison under types that cannot hold the case is SKIP before the underflow floor could pass it") {
    // x reaches 1.26e30 here: under a declared f16 compute the floor, which grows with x, passed
    // 2 ref + 1 (ratio 8.5e-26).
    const golden::GoldenCase c = bundled("subnormal_gemm_weights_bf16");
    const Precision f16{DType::f16, DType::f16};
    const auto garbage = [](double v) { return 2 * v + 1; };
    Comparison r = compare_output(c, output_as(c, DType::bf16, garbage), f16, 1);
    CHECK(r.status == Status::skip);
    CHECK(has(r.reason, "beyond the declared precision's range: the values of hidden_states"));
    CHECK(r.metrics.worst_ratio == 0.0);  // not compared: no metrics (spec/report-format.md)
    // Under f32, which holds the case, the garbage fails and the reference passes. (Under f16 the
    // reference is within bounds that hold |ref| and more: MISTRUSTED, not PASS.)
    CHECK(compare_output(c, output_as(c, DType::bf16, garbage), kF32, 1).status == Status::fail);
    CHECK(compare_output(c, output_as(c, DType::bf16), kF32, 1).status == Status::pass);
    CHECK(compare_output(c, output_as(c, DType::bf16), f16, 1).status == Status::mistrusted);
}

TEST_CASE("inputs are held by the compute type, not the storage type: f32 compute takes x = 1.26e30 with f16 storage") {
    // The inputs enter the computation in the compute type; only the stage values are stored. Here
    // they are small (subnormal weights times x), so f32 compute with f16 storage holds the case: a
    // wrong output FAILS, where judging x by f16's range (65504) would SKIP it unjudged.
    const golden::GoldenCase c = bundled("subnormal_gemm_weights_bf16");
    const Precision f32_f16{DType::f32, DType::f16};
    CHECK_FALSE(beyond_declared_range(c.problem, f32_f16, 1));
    const auto garbage = [](double v) { return 2 * v + 1; };
    CHECK(compare_output(c, output_as(c, DType::bf16, garbage), f32_f16, 1).status == Status::fail);
    // f16 compute with f32 storage: x is past the compute type's range, SKIP.
    const auto why = beyond_declared_range(c.problem, Precision{DType::f16, DType::f32}, 1);
    REQUIRE(why);
    CHECK(has(*why, "the values of hidden_states"));
}

TEST_CASE("bounds of at least |ref| under the declared precision: the output passes, MISTRUSTED") {
    // A declared bf16 accumulation over I + 1 = 1025 terms: g(1025, 2^-8) = 0.75 times magnitudes
    // sum |W||a| well above |ref|, and the sign-flipped output passed (relative error 2).
    const golden::GoldenCase c = bundled("tf32_long_inter");
    const Precision bf16{DType::bf16, DType::bf16};
    const auto flipped = [](double v) { return -v; };
    Comparison r = compare_output(c, output_as(c, DType::f32, flipped), bf16, 1);
    CHECK(r.status == Status::mistrusted);
    CHECK(has(r.reason, "have a bound of at least |ref| under the declared precision: there an output of zeros passes"));
    CHECK(compare_output(c, output_as(c, DType::f32), bf16, 1).status == Status::mistrusted);
    // Under f32 the flip fails and the reference passes.
    CHECK(compare_output(c, output_as(c, DType::f32, flipped), kF32, 1).status == Status::fail);
    CHECK(compare_output(c, output_as(c, DType::f32), kF32, 1).status == Status::pass);
}

TEST_CASE("an infinite bias that the clamp makes exact leaves the token's bound finite: a wrong row fails") {
    // Token 0 meets bias_0 = -inf on a linear lane: clamped to -L, exact; its output is finite.
    // Its bound was +inf and row 0 times 1e30 passed.
    const golden::GoldenCase c = bundled("nonfinite_propagation");
    const std::size_t H = c.outputs.at("output").shape().back();
    for (std::size_t h = 0; h < H; ++h) REQUIRE(std::isfinite(c.outputs.at("output").get(h)));
    Tensor wrong = output_as(c, DType::f32);
    for (std::size_t h = 0; h < H; ++h) wrong.set(h, wrong.get(h) * 1e30);
    const Comparison r = compare_output(c, wrong, kF32, 1);
    CHECK(r.status == Status::fail);
    CHECK(r.metrics.over_bound >= H - 1);
    CHECK(compare_output(c, output_as(c, DType::f32), kF32, 1).status == Status::pass);
    // A bound that is still infinite where the reference is finite (a file whose stored bounds
    // are trusted as they are) is named: MISTRUSTED, not PASS.
    golden::GoldenCase loose = c;
    loose.outputs.at("bound_first_acc").set(3, INFINITY);
    const Comparison l = compare_output(loose, output_as(c, DType::f32), kF32, 1);
    CHECK(l.status == Status::mistrusted);
    CHECK(has(l.reason, "1 of 64 finite reference elements have no finite bound"));
}

TEST_CASE("swish's beta past the compute type's range is SKIP where the type's infinite beta makes NaN") {
    // beta = 1e39 is inf in f32, and inf * 0 (a zero gate) is NaN where the reference's swish(0)
    // is 0: every f32 backend's output. Under f64 compute the same NaN is a FAIL.
    Problem p = test::small_problem(ExpertType::gemm3_swiglu, Convention::openvino, 5, 12, 6, 4, 2);
    p.attributes = attributes_for(ExpertType::gemm3_swiglu, Convention::openvino, 1e39, 7.0);
    for (std::size_t h = 0; h < 12; ++h) p.inputs.at(kHiddenStates).set(h, 0.0);
    const golden::GoldenCase c = test::golden_case(p);
    REQUIRE(c.outputs.at("output").get(0) == 0.0);
    Tensor out = output_as(c, DType::f32);
    for (std::size_t h = 0; h < 12; ++h) out.set(h, NAN);
    const Comparison r = compare_output(c, out, kF32, 1);
    CHECK(r.status == Status::skip);
    CHECK(has(r.reason, "swish's beta: up to 1e+39, beyond f32's largest value"));
    CHECK(compare_output(c, out, {DType::f64, DType::f64}, 1).status == Status::fail);
}
