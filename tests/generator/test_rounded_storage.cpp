// The catalogue key `rounded_storage` (storage-rounding cases, spec/catalog-format.md): read as a
// user writes it ("data" follows an expanded dtype), refused where it cannot hold, and certified
// by the generator: the case must have intermediates the type lacks, and no correct rounding of
// them may show in the output.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "moe/generator/case_spec.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/spec/error.hpp"
#include "catalog_text.hpp"
#include "temp_dir.hpp"

using namespace moe;
using namespace moe::generator;

namespace {

std::vector<CaseSpec> catalog(const std::string& cases) { return test::load_catalog_cases(cases); }

// exact_rounding_gemm3_act's design, with the fills and routing given by the caller.
std::string act_case(const std::string& extra) {
    return R"({"name": "r", "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "params": {"swish_beta": 0.0},
        "shape": {"tokens": 32, "hidden": 1, "inter": 1, "experts": 16, "topk": 1}, "exact": true, "seed": 3,
        "routing": {"weights": "dyadic"}, "fill": {"hidden_states": {"kind": "dyadic", "range": 1, "bits": 0},
        "weight_0": {"kind": "log_uniform", "min_exp": -1, "max_exp": -1},
        "weight_1": {"kind": "log_uniform", "min_exp": -1, "max_exp": -1},
        "weight_2": {"kind": "dyadic", "range": 1, "bits": 0}})" +
           extra + "}";
}

}  // namespace

TEST_CASE("rounded_storage: \"data\" takes each expanded data type; f16 and bf16 only, with exact, without exact_storage") {
    const auto cases = catalog(act_case(R"(, "rounded_storage": "data", "expand": {"dtype": ["bf16", "f16"]})"));
    REQUIRE(cases.size() == 2);
    CHECK(cases[0].rounded_storage == DType::bf16);
    CHECK(cases[1].rounded_storage == DType::f16);
    CHECK(catalog(act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16")")).at(0).rounded_storage == DType::bf16);
    CHECK_THROWS_WITH_AS(catalog(act_case(R"(, "rounded_storage": "data")")), doctest::Contains("rounded_storage"),
                         InputError);  // f32 data
    CHECK_THROWS_WITH_AS(catalog(act_case(R"(, "dtype": "bf16", "rounded_storage": "f32")")),
                         doctest::Contains("rounded_storage"), InputError);
    CHECK_THROWS_WITH_AS(catalog(act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16", "exact_storage": "bf16")")),
                         doctest::Contains("rounded_storage"), InputError);
    std::string inexact = act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16")");
    inexact.replace(inexact.find("\"exact\": true"), 13, "\"exact\": false");
    CHECK_THROWS_WITH_AS(catalog(inexact), doctest::Contains("rounded_storage"), InputError);
}

TEST_CASE("rounded_storage: certified with room for the rounding; the generator refuses a case that tests nothing or shows a rounding") {
    const CaseSpec ok = catalog(act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16")")).at(0);
    const Problem p = synthesize(ok);
    // act needs 16 bits: not a bf16 value, but a rounded one is fine for the f32 steps after it.
    CHECK_THROWS_WITH_AS(reference::certify_exact(p, 24, DType::bf16), doctest::Contains("not exact in bf16 storage"),
                         InputError);
    CHECK(reference::certify_exact(p, 24, DType::bf16, true) <= 24.0);
    BuildReport report;
    CHECK(build_golden(ok, {false, 1}, &report).exact);
    CHECK(report.values_rounded > 0);

    // Weights in {-1, 0, 1}: every intermediate is a bf16 value, an exact_storage case.
    std::string plain = act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16")");
    const std::string full = R"("kind": "log_uniform", "min_exp": -1, "max_exp": -1)";
    for (int i = 0; i < 2; ++i) plain.replace(plain.find(full), full.size(), R"("kind": "dyadic", "range": 1, "bits": 0)");
    CHECK_THROWS_WITH_AS(build_golden(catalog(plain).at(0), {false, 1}), doctest::Contains("declare exact_storage"),
                         InputError);

    // Two slots per token: a backend may round one slot's act and keep the other's.
    std::string two = act_case(R"(, "dtype": "bf16", "rounded_storage": "bf16")");
    two.replace(two.find("\"topk\": 1"), 9, "\"topk\": 2");
    CHECK_THROWS_WITH_AS(build_golden(catalog(two).at(0), {false, 1}), doctest::Contains("rounding shows: token"),
                         InputError);
}
