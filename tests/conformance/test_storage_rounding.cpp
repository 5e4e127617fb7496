// Storage-rounding cases (moe/reference/storage_rounding.hpp, storage_loses_nothing): exact cases
// whose intermediates a backend's narrow storage type lacks, built so that rounding them to
// nearest or keeping them gives one output in the data type. A backend declaring that storage
// gets zero tolerance there, so a conversion that truncates the intermediates fails, where the
// ordinary bound, which allows a rounding of each (and truncation is within two), lets it pass.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "conformance_check.hpp"
#include "moe/conformance/exact_storage.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/reference/storage_rounding.hpp"
#include "small_cases.hpp"
#include "tensor_compare.hpp"

using namespace moe;
using namespace moe::conformance;

namespace {

generator::Fill unit() {
    generator::Fill f;
    f.kind = generator::Fill::Kind::dyadic;
    f.range = 1;  // {-1, 0, 1}
    return f;
}

generator::Fill full_significands() {
    generator::Fill f;
    f.kind = generator::Fill::Kind::log_uniform;
    f.min_exp = f.max_exp = -1;  // [1/2, 1), every bit of the type used
    return f;
}

// exact_rounding_gemm3_act's design: H = I = K = 1, so gate and up are weights of the data type,
// act = gate up / 2 is often not a value of it, and down and the output are act times +-1.
generator::CaseSpec act_rounding_spec(DType dtype, std::size_t K = 1) {
    auto s = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 32, 1, 1, 16, K, dtype);
    s.attributes = attributes_for(ExpertType::gemm3_swiglu, Convention::openvino, 0.0, 0.0);
    s.fills[kHiddenStates] = unit();
    s.fills[kWeight0] = full_significands();
    s.fills[kWeight1] = full_significands();
    s.fills[kWeight2] = unit();
    s.routing.weights = generator::RoutingSpec::Weights::dyadic;
    s.exact = true;
    s.rounded_storage = dtype;
    return s;
}

golden::GoldenCase built(const generator::CaseSpec& s) {
    golden::GoldenCase c = generator::build_golden(s, {true, 1});
    REQUIRE(c.exact);
    return c;
}

// The output with its elements cut toward zero in `dtype`: here, where the output is act times
// +-1, what truncating act gives.
Tensor truncated(const golden::GoldenCase& c, DType dtype) {
    const Tensor& ref = c.outputs.at("output");
    Tensor t(dtype, ref.shape());
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double v = ref.get(i), q = ulp(dtype, v);
        t.set(i, std::copysign(std::floor(std::fabs(v) / q) * q, v));
    }
    return t;
}

// The reference with every stage rounded to `storage`, in `out`: a backend that stores all.
Tensor all_rounded(const golden::GoldenCase& c, DType storage, DType out) {
    reference::Options o;
    o.rounded_stages = 0xF;
    o.storage = storage;
    const Tensor r = reference::run(c.problem, o).output;
    return Tensor::from_f64(out, r.shape(), r.to_f64());
}

}  // namespace

TEST_CASE("a storage-rounding case: zero tolerance for its storage type, and a truncated intermediate fails") {
    for (DType dt : {DType::bf16, DType::f16}) {
        CAPTURE(dtype_name(dt));
        golden::GoldenCase c = built(act_rounding_spec(dt));
        CHECK(reference::values_storage_lacks(c.stages, dt) > 0);
        CHECK_FALSE(intermediates_exact_in(c, dt, 1));
        CHECK(storage_loses_nothing(c, dt, dt, 1));
        CHECK(storage_loses_nothing(c, DType::f32, dt, 1));  // f32 storage: the ordinary exact rule

        const Precision lowp{DType::f32, dt};
        // Every stage rounded or none: one output in the data type.
        const Tensor kept = Tensor::from_f64(dt, c.outputs.at("output").shape(), c.outputs.at("output").to_f64());
        const Tensor rounded = all_rounded(c, dt, dt);
        CHECK(test::max_abs_diff(kept, rounded) == 0.0);
        const Comparison good = compare_output(c, rounded, lowp, 1);
        CHECK(good.exact);
        CHECK(good.status == Status::pass);

        const Tensor bad = truncated(c, dt);
        REQUIRE(test::max_abs_diff(bad, kept) > 0.0);
        const Comparison caught = compare_output(c, bad, lowp, 1);
        CHECK(caught.exact);
        CHECK(caught.status == Status::fail);
        // Under the ordinary bound, the one a case not built this way gets, it passes.
        c.exact = false;
        CHECK(compare_output(c, bad, lowp, 1).status == Status::pass);
    }
}

TEST_CASE("a storage-rounding case in a wider output type: the readings themselves differ, the bound judges") {
    const golden::GoldenCase c = built(act_rounding_spec(DType::bf16));
    CHECK_FALSE(storage_loses_nothing(c, DType::bf16, DType::f32, 1));
    // An f32 output that holds the rounded reading itself is correct, and not the exact reference.
    const Tensor rounded = all_rounded(c, DType::bf16, DType::f32);
    REQUIRE(test::max_abs_diff(rounded, c.outputs.at("output")) > 0.0);
    const Comparison r = compare_output(c, rounded, {DType::f32, DType::bf16}, 1);
    CHECK_FALSE(r.exact);
    CHECK(r.status == Status::pass);
}

TEST_CASE("storage_rounding_shows: two slots of a token with values the type lacks, or a reading that rounds otherwise") {
    // K = 2: a backend may round one slot's act and keep the other's, a mix no reading covers.
    auto two = act_rounding_spec(DType::bf16, 2);
    two.rounded_storage = DType::f32;  // build it as a plain exact case
    const golden::GoldenCase c2 = built(two);
    const auto slots = reference::storage_rounding_shows(c2.problem, c2.stages, DType::bf16, 1);
    REQUIRE(slots);
    CHECK(slots->find("slots") != std::string::npos);
    CHECK_FALSE(storage_loses_nothing(c2, DType::bf16, DType::bf16, 1));

    // Gate rounded, then multiplied by an up that is not a power of two, then act rounded again:
    // the readings round to the data type differently (exact_rounding_gemm3_gate keeps up a
    // power of two for this reason).
    auto both = act_rounding_spec(DType::bf16);
    both.hidden = 2;
    both.fills[kWeight0].min_exp = -4;
    both.fills[kWeight0].max_exp = 0;
    both.rounded_storage = DType::f32;
    const golden::GoldenCase cb = built(both);
    const auto reading = reference::storage_rounding_shows(cb.problem, cb.stages, DType::bf16, 1);
    REQUIRE(reading);
    CHECK(reading->find("rounded to bf16") != std::string::npos);
    CHECK_FALSE(storage_loses_nothing(cb, DType::bf16, DType::bf16, 1));
}

TEST_CASE("a file's stages do not decide the zero tolerance: another shape, or values the op does not produce") {
    // A golden file is untrusted: its /stages may hold anything. The rule reads the reference's.
    golden::GoldenCase c = built(act_rounding_spec(DType::bf16));
    const auto stored = c.stages;
    for (auto& [name, t] : c.stages) {
        Tensor flat(t.dtype(), {t.size()});  // rank 1 where [T, K, features] is read
        c.stages[name] = flat;
    }
    const auto misshapen = reference::storage_rounding_shows(c.problem, c.stages, DType::bf16, 1);
    REQUIRE(misshapen);
    CHECK(misshapen->find("not [T, K, features]") != std::string::npos);
    CHECK(storage_loses_nothing(c, DType::bf16, DType::bf16, 1));  // the reference's stages: zeros stored change nothing
    c.stages = stored;
    CHECK(storage_loses_nothing(c, DType::bf16, DType::bf16, 1));
}
