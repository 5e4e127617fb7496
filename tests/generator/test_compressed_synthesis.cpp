// The catalogue's compression keys (spec/catalog-format.md, "Compressed weights") and the
// synthesis they drive: layouts, types, ranges, the exactness certificate, the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "moe/generator/case_spec.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "catalog_text.hpp"

using namespace moe;
using namespace moe::generator;
using moe::reference::certify_exact;

namespace {

std::string catalog(const std::string& keys, const std::string& type = "GEMM3_SWIGLU", const std::string& more = "") {
    return R"({"format": "moe-catalog", "format_version": 1, "cases": [{"name": "c", "expert_type": ")" + type +
           R"(", "convention": "openvino", "seed": 7, "shape": {"tokens": 4, "hidden": 64, "inter": 32, "experts": 4,
           "topk": 2})" + more + ", " + keys + "}]}";
}

std::vector<CaseSpec> load_text(const std::string& text) { return moe::test::load_catalog_text(text); }

std::string load_error(const std::string& text) {
    try {
        const auto cases = load_text(text);
        for (const auto& c : cases) validate(synthesize(c));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("compression keys: types, group size, scale type and layout, zero point, which weights") {
    const auto cases = load_text(catalog(
        R"("weight_dtype": "u4", "group_size": 16, "scale_dtype": "bf16", "zero_point": "f16", "scale_layout": "ENG1",
           "compressed_weights": ["weight_0", "weight_2"])"));
    REQUIRE(cases.size() == 1);
    const Problem p = synthesize(cases[0]);
    REQUIRE_NOTHROW(validate(p));
    CHECK(p.input(kWeight0).dtype() == DType::u4);
    CHECK(p.input(kWeight1).dtype() == DType::f32);  // not listed: in the data type
    CHECK(p.input(kWeight2).dtype() == DType::u4);
    CHECK(p.input("weight_0_scale").dtype() == DType::bf16);
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 32, 4, 1});
    CHECK(p.input("weight_2_zero_point").dtype() == DType::f16);
    CHECK(p.input("weight_2_scale").shape() == Shape{4, 64, 2, 1});
    CHECK(!p.has("weight_1_scale"));
    // The codes cover the type's whole range.
    const Tensor& w = p.input(kWeight0);
    double lo = 99, hi = -99;
    for (std::size_t i = 0; i < w.size(); ++i) lo = std::min(lo, w.get(i)), hi = std::max(hi, w.get(i));
    CHECK(lo == 0.0);
    CHECK(hi == 15.0);
}

TEST_CASE("compression defaults: per channel, f16 scales for integers, f32 for FP8, MXFP4 blocks of 32") {
    Problem p = synthesize(load_text(catalog(R"("weight_dtype": "i8")"))[0]);
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 32, 1});
    CHECK(p.input("weight_0_scale").dtype() == DType::f16);
    p = synthesize(load_text(catalog(R"("weight_dtype": "f8e5m2", "scale_layout": "E1G")"))[0]);
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 1, 1});  // per tensor
    CHECK(p.input("weight_1_scale").dtype() == DType::f32);
    p = synthesize(load_text(catalog(R"("weight_dtype": "f4e2m1")", "GEMM2_BIAS_SWIGLU_CLAMP",
                                     R"(, "params": {"swish_beta": 1.702, "clamp_limit": 7.0})"))[0]);
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 64, 2});
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 64, 1});
    CHECK(p.input("weight_1_scale").dtype() == DType::f8e8m0);
    CHECK(p.input(kBias0).dtype() == DType::f32);  // biases stay in the data type
    REQUIRE_NOTHROW(validate(p));
}

TEST_CASE("compression refusals name the key") {
    CHECK(load_error(catalog(R"("weight_dtype": "f32")")).find("key weight_dtype: 'f32' is not a compressed weight type") !=
          std::string::npos);
    CHECK(load_error(catalog(R"("group_size": 8)")).find("key weight_dtype: missing") != std::string::npos);
    CHECK(load_error(catalog(R"("weight_dtype": "f8e4m3", "zero_point": "weight_type")"))
              .find("key zero_point: only the integer types") != std::string::npos);
    CHECK(load_error(catalog(R"("weight_dtype": "u8", "scale_dtype": "f8e8m0")")).find("key scale_dtype") !=
          std::string::npos);
    CHECK(load_error(catalog(R"("weight_dtype": "f4e2m1", "group_size": 16)")).find("MXFP4 blocks are 32") !=
          std::string::npos);
    CHECK(load_error(catalog(R"("weight_dtype": "u4", "group_size": 24)")).find("group_size 24 does not divide K = 64") !=
          std::string::npos);
    std::string spec = catalog(R"("weight_dtype": "u4")", "GEMM2_BIAS_SWIGLU_CLAMP", R"(, "params": {"clamp_limit": 7.0})");
    spec.replace(spec.find("openvino"), 8, "spec");  // GEMM2 in the spec convention is KN
    CHECK(load_error(spec).find("compressed weights are stored [E, N, K]") != std::string::npos);
}

TEST_CASE("group_size as an object: each weight its own group size, the number form unchanged") {
    // GEMM3, H = 64, I = 32: gate and up in groups of 16, down in groups of 8.
    Problem p = synthesize(load_text(catalog(R"("weight_dtype": "u8", "group_size": {"weight_0": 16, "weight_1": 16, "weight_2": 8})"))[0]);
    REQUIRE_NOTHROW(validate(p));
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 32, 4});
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 32, 4});
    CHECK(p.input("weight_2_scale").shape() == Shape{4, 64, 4});
    CHECK(weight_compression(p, kWeight0)->group_size == 16);
    CHECK(weight_compression(p, kWeight2)->group_size == 8);
    // 0 is per channel for that weight alone.
    p = synthesize(load_text(catalog(R"("weight_dtype": "i4", "group_size": {"weight_0": 0, "weight_1": 32, "weight_2": 16})"))[0]);
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 32, 1});
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 32, 2});
    CHECK(p.input("weight_2_scale").shape() == Shape{4, 64, 2});
    // GEMM2: weight_0 reads H = 64, weight_1 reads I = 32; only the compressed weights are named.
    p = synthesize(load_text(catalog(R"("weight_dtype": "u8", "group_size": {"weight_0": 32, "weight_1": 4})",
                                     "GEMM2_BIAS_SWIGLU_CLAMP", R"(, "params": {"clamp_limit": 7.0})"))[0]);
    CHECK(p.input("weight_0_scale").shape() == Shape{4, 64, 2});
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 64, 8});
    p = synthesize(load_text(catalog(R"("weight_dtype": "u4", "compressed_weights": ["weight_2"], "group_size": {"weight_2": 4})"))[0]);
    CHECK(p.input(kWeight0).dtype() == DType::f32);
    CHECK(p.input("weight_2_scale").shape() == Shape{4, 64, 8});
    // MXFP4: 32 (or 0, meaning 32) for each.
    p = synthesize(load_text(catalog(R"("weight_dtype": "f4e2m1", "group_size": {"weight_0": 32, "weight_1": 0, "weight_2": 32})"))[0]);
    CHECK(p.input("weight_1_scale").shape() == Shape{4, 32, 2});
    // The same sizes as a number and as an object make the same case, bit for bit.
    const Problem a = synthesize(load_text(catalog(R"("weight_dtype": "u4", "group_size": 8, "zero_point": "f16")"))[0]);
    const Problem b = synthesize(load_text(catalog(
        R"("weight_dtype": "u4", "group_size": {"weight_0": 8, "weight_1": 8, "weight_2": 8}, "zero_point": "f16")"))[0]);
    for (const auto& [name, t] : a.inputs) {
        CAPTURE(name);
        REQUIRE(b.has(name));
        CHECK(t.shape() == b.input(name).shape());
        CHECK(std::equal(t.data(), t.data() + t.nbytes(), b.input(name).data()));
    }
}

TEST_CASE("group_size as an object: refusals name the case and the key") {
    auto error = [](const std::string& sizes, const std::string& type = "GEMM3_SWIGLU", const std::string& more = "") {
        return load_error(catalog(R"("weight_dtype": "u8", "group_size": )" + sizes + more, type,
                                  type == "GEMM3_SWIGLU" ? "" : R"(, "params": {"clamp_limit": 7.0})"));
    };
    auto has = [](const std::string& msg, const std::string& part) {
        CAPTURE(msg);
        CHECK(msg.find("case c, ") != std::string::npos);
        CHECK(msg.find(part) != std::string::npos);
    };
    has(error(R"({"weight_0": 16, "weight_1": 16, "weight_3": 8})"), "key group_size.weight_3: not a weight of GEMM3");
    has(error(R"({"weight_0": 16, "weight_1": 16, "weight_2": 8})", "GEMM2_BIAS_SWIGLU_CLAMP"),
        "key group_size.weight_2: not a weight of GEMM2");
    has(error(R"({"weight_0": 16, "weight_1": 16, "weight_2": 24})"),
        "key group_size.weight_2: 24 does not divide K = 32 of weight_2");
    has(error(R"({"weight_0": 16, "weight_1": 12, "weight_2": 8})"),
        "key group_size.weight_1: 12 does not divide K = 64 of weight_1");
    has(error(R"({"weight_0": 16, "weight_1": 64})", "GEMM2_BIAS_SWIGLU_CLAMP"),
        "key group_size.weight_1: 64 does not divide K = 32 of weight_1");
    has(error(R"({"weight_0": 16, "weight_2": 8})"), "key group_size: weight_1 is compressed but has no group size");
    has(error("{}"), "key group_size: weight_0 is compressed but has no group size");
    has(error(R"({"weight_0": 16, "weight_1": 16, "weight_2": -8})"), "key group_size.weight_2: -8 is not a non-negative integer");
    has(error(R"({"weight_0": 16, "weight_1": 16, "weight_2": "8"})"), "key group_size.weight_2:");
    has(error(R"({"weight_0": 16, "weight_2": 8})", "GEMM3_SWIGLU", R"(, "compressed_weights": ["weight_0"])"),
        "key group_size.weight_2: weight_2 is not compressed in this case");
    has(load_error(catalog(R"("weight_dtype": "f4e2m1", "group_size": {"weight_0": 32, "weight_1": 16, "weight_2": 32})")),
        "key group_size.weight_1: MXFP4 blocks are 32 inputs");
    // The number form keeps its message (from synthesis, which knows each weight's K).
    CHECK(error("24").find("case c: group_size 24 does not divide K = 64 of weight_0") != std::string::npos);
}

TEST_CASE("exact compressed cases pass the certificate: powers-of-two scales, small codes") {
    for (const char* type : {"u4", "i4", "u8", "i8", "f8e4m3", "f8e5m2"}) {
        CAPTURE(type);
        const std::string keys = std::string(R"("weight_dtype": ")") + type +
                                 R"(", "group_size": 8, "exact": true, "params": {"swish_beta": 0.0},
            "routing": {"weights": "dyadic"}, "fill": {"hidden_states": {"kind": "dyadic", "range": 2, "bits": 1}})";
        std::string text = catalog(keys);
        const std::string sizes = R"("hidden": 64, "inter": 32)";
        text.replace(text.find(sizes), sizes.size(), R"("hidden": 16, "inter": 16)");
        const Problem p = synthesize(load_text(text)[0]);
        CHECK(certify_exact(p) <= 24.0);
        const Tensor s = p.input("weight_0_scale");
        for (std::size_t i = 1; i < s.size(); ++i) CHECK(s.get(i) == s.get(0));
    }
}
