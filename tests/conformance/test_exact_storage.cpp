// Zero tolerance for narrow storage (conformance/src/exact_storage.cpp, exact_comparison_applies):
// an exact case whose intermediates are all values of bf16 (or f16) is compared bit for bit with
// a backend that declares that storage, so an output conversion that truncates instead of
// rounding to nearest even fails there, while the ordinary bound, which the declared storage
// widens, lets it pass.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "conformance_check.hpp"
#include "moe/conformance/exact_storage.hpp"
#include "moe/conformance/tolerance.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/spec/error.hpp"
#include "small_cases.hpp"
#include "tensor_compare.hpp"

using namespace moe;
using namespace moe::conformance;

namespace {

// GEMM3, inputs in {-1, 0, 1}, swish beta 0, routing weights drawn in (0.09, 0.91) and rounded
// to the data type: every intermediate fits the data type, the weighted output sums do not.
generator::CaseSpec storage_exact_spec(DType dtype) {
    auto s = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 8, 8, 4, 4, 2, dtype);
    s.attributes = attributes_for(ExpertType::gemm3_swiglu, Convention::openvino, 0.0, 0.0);
    generator::Fill unit;
    unit.kind = generator::Fill::Kind::dyadic;
    unit.range = 1;
    for (const char* name : {kHiddenStates, kWeight0, kWeight1, kWeight2}) s.fills[name] = unit;
    s.routing.weights = generator::RoutingSpec::Weights::random;
    s.exact = true;
    s.exact_storage = dtype;
    return s;
}

golden::GoldenCase storage_exact_case(DType dtype) {
    const Problem p = generator::synthesize(storage_exact_spec(dtype));
    reference::certify_exact(p, 24, dtype);
    golden::GoldenCase c = test::golden_case(p, true);
    c.exact = true;
    return c;
}

// The reference output converted to `dtype` by truncation toward zero.
Tensor truncated(const golden::GoldenCase& c, DType dtype) {
    const Tensor& ref = c.outputs.at("output");
    Tensor t(dtype, ref.shape());
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double v = ref.get(i), q = ulp(dtype, v);  // the spacing of dtype's values at v
        t.set(i, std::copysign(std::floor(std::fabs(v) / q) * q, v));
    }
    return t;
}

}  // namespace

TEST_CASE("first_inexact_intermediate names the first stage element the type cannot hold") {
    Tensor act(DType::f64, {1, 2, 3});
    for (std::size_t i = 0; i < 6; ++i) act.set(i, 1.5 * static_cast<double>(i));
    std::map<std::string, Tensor> stages{{"act", act}};
    CHECK_FALSE(first_inexact_intermediate(stages, DType::bf16));
    act.set(4, 1.0 + std::ldexp(1.0, -8));  // 9 significand bits: f16 holds it, bf16 does not
    stages["act"] = act;
    CHECK_FALSE(first_inexact_intermediate(stages, DType::f16));
    const auto why = first_inexact_intermediate(stages, DType::bf16);
    REQUIRE(why);
    CHECK(*why == "act[0, 1, 1] = 1.00390625 is not a bf16 value");
    act.set(4, 1e-7);  // below f16's subnormals: f16 cannot hold it, bf16 can only round it
    stages["act"] = act;
    CHECK(first_inexact_intermediate(stages, DType::f16));
}

TEST_CASE("exact_comparison_applies: narrow storage counts when the case's intermediates fit it") {
    CHECK(exact_comparison_applies(true, {DType::f32, DType::bf16}, true));
    CHECK(exact_comparison_applies(true, {DType::f32, DType::f16}, true));
    CHECK_FALSE(exact_comparison_applies(true, {DType::f32, DType::bf16}, false));
    CHECK_FALSE(exact_comparison_applies(false, {DType::f32, DType::bf16}, true));
    // The certificate's sums need f32's 24 bits: a narrow compute type never gets zero tolerance.
    CHECK_FALSE(exact_comparison_applies(true, {DType::bf16, DType::bf16}, true));
    CHECK_FALSE(exact_comparison_applies(true, {DType::f16, DType::f32}, true));
}

TEST_CASE("intermediates_exact_in: from the file's stages, or from the reference's without them") {
    for (DType dt : {DType::bf16, DType::f16}) {
        CAPTURE(dtype_name(dt));
        golden::GoldenCase c = storage_exact_case(dt);
        CHECK(intermediates_exact_in(c, dt, 1));
        CHECK(intermediates_exact_in(c, DType::f32, 1));
        c.stages.clear();
        CHECK(intermediates_exact_in(c, dt, 1));
    }
    // An exact case certified for f32 only: act needs more than bf16's 8 bits.
    auto spec = storage_exact_spec(DType::bf16);
    generator::Fill wide;
    wide.kind = generator::Fill::Kind::dyadic;
    wide.range = 7;
    wide.bits = 2;
    spec.fills[kHiddenStates] = wide;
    const Problem p = generator::synthesize(spec);
    CHECK_THROWS_WITH_AS(reference::certify_exact(p, 24, DType::bf16), doctest::Contains("not exact in bf16 storage"),
                         InputError);
    golden::GoldenCase c = test::golden_case(p, true);
    c.exact = true;
    CHECK_FALSE(intermediates_exact_in(c, DType::bf16, 1));
}

TEST_CASE("a truncating output conversion fails an exact case for its storage and slips through the bound") {
    for (DType dt : {DType::bf16, DType::f16}) {
        CAPTURE(dtype_name(dt));
        golden::GoldenCase c = storage_exact_case(dt);
        const Precision lowp{DType::f32, dt};  // what loop_lowp and cpu declare for this data
        const Tensor bad = truncated(c, dt);
        const Tensor good = Tensor::from_f64(dt, c.outputs.at("output").shape(), c.outputs.at("output").to_f64());
        REQUIRE(test::max_abs_diff(bad, good) > 0.0);

        const Comparison exact_good = compare_output(c, good, lowp, 1);
        CHECK(exact_good.exact);
        CHECK(exact_good.status == Status::pass);
        const Comparison exact_bad = compare_output(c, bad, lowp, 1);
        CHECK(exact_bad.exact);
        CHECK(exact_bad.status == Status::fail);

        // The same output judged by the ordinary bound (the case not marked exact): it passes.
        c.exact = false;
        const Comparison bounded = compare_output(c, bad, lowp, 1);
        CHECK_FALSE(bounded.exact);
        CHECK(bounded.status == Status::pass);
    }
}

TEST_CASE("an exact case in a wider output type: the exact reference or its rounding to the data type, nothing else") {
    // A plugin may declare an f32 output for bf16 data, and a Python kernel returns y.float():
    // either holds a correct answer; a truncated conversion stays wrong in any container.
    for (DType dt : {DType::bf16, DType::f16}) {
        CAPTURE(dtype_name(dt));
        const golden::GoldenCase c = storage_exact_case(dt);
        const Precision f32{DType::f32, DType::f32};
        const Tensor& ref = c.outputs.at("output");
        const Tensor exact = Tensor::from_f64(DType::f32, ref.shape(), ref.to_f64());
        const Tensor rounded =
            Tensor::from_f64(DType::f32, ref.shape(), Tensor::from_f64(dt, ref.shape(), ref.to_f64()).to_f64());
        const Tensor cut = Tensor::from_f64(DType::f32, ref.shape(), truncated(c, dt).to_f64());
        REQUIRE(test::max_abs_diff(exact, rounded) > 0.0);  // the case's output needs more bits than dt
        for (const auto& [label, out, pass] :
             {std::tuple{"exact", &exact, true}, std::tuple{"rounded", &rounded, true}, std::tuple{"truncated", &cut, false}}) {
            CAPTURE(label);
            const Comparison r = compare_output(c, *out, f32, 1);
            CHECK(r.exact);
            CHECK((r.status == Status::pass) == pass);
        }
    }
}

TEST_CASE("routing_floor: K products that may each round to the compute type's subnormal grid") {
    Dims d;
    d.T = 4, d.H = 8, d.I = 4, d.E = 4, d.K = 3;
    CHECK(tolerance_model({DType::f32, DType::f32}, DType::bf16, d).routing_floor == 1.5 * std::ldexp(1.0, -149));
    CHECK(tolerance_model({DType::f16, DType::f16}, DType::f16, d).routing_floor == 1.5 * std::ldexp(1.0, -24));
}
