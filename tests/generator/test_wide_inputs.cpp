// The catalogue's inputs for the conformance-power cases (tools/generator/src/synthesize.cpp,
// exactness.cpp): `wide` routing weights (1 down to 1e-6, subnormals, exact zeros, sums other
// than 1), `log_uniform` fills (a large dynamic range) and the storage certificate of
// `exact_storage`, each read from a catalogue as a user writes it.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "moe/generator/case_spec.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/error.hpp"
#include "catalog_text.hpp"
#include "temp_dir.hpp"

using namespace moe;
using namespace moe::generator;
using moe::reference::certify_exact;

namespace {

std::vector<CaseSpec> catalog(const std::string& cases) { return test::load_catalog_cases(cases); }

const char* kWide = R"({"name": "w", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "openvino",
    "shape": {"tokens": 16, "hidden": 8, "inter": 4, "experts": 4, "topk": 2}, "routing": {"weights": "wide"},
    "seed": 5, "expand": {"dtype": ["f32", "f16", "bf16"]}})";

}  // namespace

TEST_CASE("wide routing weights: by token mod 4, mixed decades, all small, subnormal, one exact zero") {
    for (const CaseSpec& c : catalog(kWide)) {
        CAPTURE(c.name);
        const Problem p = synthesize(c);
        const Tensor& w = p.input(kRoutingWeights);  // compact [T, K] (openvino)
        const double min_normal = std::ldexp(1.0, c.dtype == DType::f16 ? -14 : -126);
        bool sum_not_one = false;
        for (std::size_t t = 0; t < 16; ++t) {
            const double a = w.get(2 * t), b = w.get(2 * t + 1);
            sum_not_one |= a + b != 1.0;
            switch (t % 4) {
                case 0:
                    for (double v : {a, b}) CHECK((v >= std::ldexp(1.0, -21) && v <= 1.0));
                    break;
                case 1:
                    for (double v : {a, b}) CHECK((v >= std::ldexp(1.0, -21) && v <= std::ldexp(1.0, -13)));
                    break;
                case 2:
                    for (double v : {a, b}) CHECK((v > 0.0 && v < min_normal));
                    break;
                default: CHECK(((a == 0.0) != (b == 0.0)));
            }
        }
        CHECK(sum_not_one);
    }
}

TEST_CASE("log_uniform fills: every binade in [min_exp, max_exp], both signs") {
    const auto cases = catalog(R"({"name": "l", "expert_type": "GEMM3_SWIGLU", "convention": "openvino",
        "shape": {"tokens": 64, "hidden": 64, "inter": 4, "experts": 1, "topk": 1}, "seed": 6,
        "fill": {"hidden_states": {"kind": "log_uniform", "min_exp": -8, "max_exp": 3}}})");
    const Tensor& x = synthesize(cases.at(0)).input(kHiddenStates);
    std::vector<int> binades(12, 0);
    int negative = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double v = x.get(i);
        int e;
        std::frexp(std::fabs(v), &e);  // |v| in [2^(e-1), 2^e)
        REQUIRE((e - 1 >= -8 && e - 1 <= 3));
        ++binades[static_cast<std::size_t>(e - 1 + 8)];
        negative += v < 0.0;
    }
    for (int n : binades) CHECK(n > 200);  // 4096 draws over 12 binades: about 341 each
    CHECK((negative > 1800 && negative < 2300));
    CHECK_THROWS_AS(catalog(R"({"name": "l", "expert_type": "GEMM3_SWIGLU", "convention": "openvino",
        "shape": {"tokens": 1, "hidden": 4, "inter": 4, "experts": 1, "topk": 1}, "seed": 6,
        "fill": {"hidden_states": {"kind": "log_uniform", "min_exp": 3, "max_exp": -8}}})"),
                    InputError);
}

TEST_CASE("exact: an infinite clamp limit clamps nothing and adds no grid (it once hung the certifier)") {
    const std::string exact = R"({"name": "e", "expert_type": "GEMM2_BIAS_SWIGLU_CLAMP", "convention": "openvino",
        "params": {"swish_beta": 0.0, "clamp_limit": LIMIT}, "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 2,
        "topk": 1}, "exact": true, "seed": 7, "routing": {"weights": "dyadic"}, "fill": {
        "hidden_states": {"kind": "dyadic", "range": 4, "bits": 2}, "weight_0": {"kind": "dyadic", "range": 4, "bits": 3},
        "bias_0": {"kind": "dyadic", "range": 4, "bits": 2}, "weight_1": {"kind": "dyadic", "range": 4, "bits": 3},
        "bias_1": {"kind": "dyadic", "range": 2, "bits": 2}}})";
    const auto with_limit = [&](const std::string& limit) {
        std::string text = exact;
        text.replace(text.find("LIMIT"), 5, limit);
        return synthesize(catalog(text).at(0));
    };
    // The same bits as a limit above every value: the clamp never acts on either.
    const double unclamped = certify_exact(with_limit("1e30"), 24, DType::f32);
    CHECK(certify_exact(with_limit(R"("inf")"), 24, DType::f32) <= unclamped);
}

TEST_CASE("exact_storage: the generator refuses a case whose stored intermediates leave the type") {
    const std::string base = R"({"name": "e", "expert_type": "GEMM3_SWIGLU", "convention": "openvino",
        "params": {"swish_beta": 0.0}, "shape": {"tokens": 4, "hidden": 8, "inter": 4, "experts": 2, "topk": 1},
        "dtype": "bf16", "exact": true, "exact_storage": "bf16", "seed": 7, "fill": {
        "weight_0": {"kind": "dyadic", "range": 1, "bits": 0}, "weight_1": {"kind": "dyadic", "range": 1, "bits": 0},
        "weight_2": {"kind": "dyadic", "range": 1, "bits": 0}, "hidden_states": )";
    const auto fits = catalog(base + R"({"kind": "dyadic", "range": 1, "bits": 0}}})");
    CHECK(fits.at(0).exact_storage == DType::bf16);
    const Problem ok = synthesize(fits.at(0));
    CHECK(certify_exact(ok, 24, DType::bf16) <= 24.0);
    // x in [-15, 15]: gate and up need 7 bits, act 14: exact in f32, not in bf16 storage.
    const Problem wide = synthesize(catalog(base + R"({"kind": "dyadic", "range": 15, "bits": 0}}})").at(0));
    CHECK_NOTHROW(certify_exact(wide, 24, DType::f32));
    CHECK_THROWS_WITH_AS(certify_exact(wide, 24, DType::bf16), doctest::Contains("act = swish(gate) * up"), InputError);
    // f16 storage also bounds the range: values on a grid finer than f16's subnormals are refused.
    const Problem tiny = synthesize(catalog(base + R"({"kind": "dyadic", "range": 1, "bits": 30}}})").at(0));
    CHECK_THROWS_WITH_AS(certify_exact(tiny, 24, DType::f16), doctest::Contains("range"), InputError);
    // exact_storage needs exact, and a narrow floating type.
    CHECK_THROWS_AS(catalog(R"({"name": "e", "expert_type": "GEMM3_SWIGLU", "convention": "openvino",
        "shape": {"tokens": 1, "hidden": 4, "inter": 4, "experts": 1, "topk": 1}, "seed": 1, "exact_storage": "bf16"})"),
                    InputError);
}
