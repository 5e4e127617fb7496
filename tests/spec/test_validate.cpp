// Every rejected-input rule of spec/README.md: the problem is refused before any arithmetic,
// with a message that names the input and the shape or element at fault.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"
#include "plain_problem.hpp"
#include "rejection.hpp"

using namespace moe;
using moe::test::has;
using moe::test::plain_problem;
using moe::test::rejection;

namespace {

const auto G2 = ExpertType::gemm2_bias_swiglu_clamp;
const auto G3 = ExpertType::gemm3_swiglu;

}  // namespace

TEST_CASE("the small test problems are valid") {
    for (auto t : {G2, G3})
        for (auto c : {Convention::spec, Convention::openvino}) {
            const Dims d = validate(plain_problem(t, c));
            CHECK(d.T == 5);
            CHECK(d.H == 12);
            CHECK(d.I == 6);
            CHECK(d.E == 4);
            CHECK(d.K == 2);
        }
}

TEST_CASE("indices outside [0, E)") {
    Problem p = plain_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices].set_index(3, -1);  // token 1, slot 1
    auto m = rejection(p);
    CHECK(has(m, "router_topk_output_indices"));
    CHECK(has(m, "[token 1, slot 1] = -1"));
    p.inputs[kTopkIndices].set_index(3, 4);
    CHECK(has(rejection(p), "[token 1, slot 1] = 4 is outside [0, E = 4)"));
}

TEST_CASE("a token selecting the same expert twice") {
    Problem p = plain_problem(G3, Convention::spec);
    auto& idx = p.inputs[kTopkIndices];
    idx.set_index(5, idx.get_index(4));  // token 2, slots 0 and 1
    CHECK(has(rejection(p), "token 2 selects expert " + std::to_string(idx.get_index(4)) + " twice (slots 0 and 1)"));
}

TEST_CASE("a dense routing weight for an expert the token does not select") {
    Problem p = plain_problem(G2, Convention::spec);  // spec: dense [E, T, 1]
    const auto& idx = p.input(kTopkIndices);
    std::size_t unused = 0;
    while (unused == static_cast<std::size_t>(idx.get_index(0)) || unused == static_cast<std::size_t>(idx.get_index(1)))
        ++unused;
    p.inputs[kRoutingWeights].set(unused * 5 + 0, 0.125);
    const auto m = rejection(p);
    CHECK(has(m, "routing_weights: dense weight for expert " + std::to_string(unused) + ", token 0 is 0.125"));
    CHECK(has(m, "does not select"));
}

TEST_CASE("top-k outside [1, E]") {
    Problem p = plain_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices] = Tensor(DType::i32, {5, 0});
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {5, 0});
    CHECK(has(rejection(p), "top-k = 0"));
    Problem q = plain_problem(G2, Convention::openvino, 1, 12, 6, 2, 2);
    q.inputs[kTopkIndices] = Tensor::from_f64(DType::i32, {1, 3}, {0, 1, 0});
    q.inputs[kRoutingWeights] = Tensor(DType::f32, {1, 3});
    CHECK(has(rejection(q), "top-k = 3"));
    CHECK(has(rejection(q), "must be in [1, E = 2]"));
}

TEST_CASE("inconsistent E, H or I across weights") {
    Problem p = plain_problem(G3, Convention::openvino);
    p.inputs[kWeight1] = Tensor(DType::f32, {3, 6, 12});
    CHECK(has(rejection(p), "weight_1: has 3 experts"));
    p = plain_problem(G3, Convention::openvino);
    p.inputs[kWeight0] = Tensor(DType::f32, {4, 6, 11});
    CHECK(has(rejection(p), "weight_0: shape [4, 6, 11] has input size 11"));
    CHECK(has(rejection(p), "hidden size 12"));
    p = plain_problem(G3, Convention::openvino);
    p.inputs[kWeight2] = Tensor(DType::f32, {4, 12, 7});
    CHECK(has(rejection(p), "weight_2: expected shape [4, 12, 6] ([E, H, I] for weight_layout NK)"));
    p = plain_problem(G2, Convention::spec);  // KN layout: weight_1 is [E, I, H]
    p.inputs[kWeight1] = Tensor(DType::f32, {4, 12, 6});
    CHECK(has(rejection(p), "weight_1: expected shape [4, 6, 12] ([E, I, H] for weight_layout KN)"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kWeight0] = Tensor(DType::f32, {4, 13, 12});
    CHECK(has(rejection(p), "fused gate_up width 13"));
}

TEST_CASE("wrong ranks") {
    Problem p = plain_problem(G2, Convention::openvino);
    p.inputs[kHiddenStates] = Tensor(DType::f32, {60});
    CHECK(has(rejection(p), "hidden_states: expected rank 2 [T, H] or rank 3 [B, S, H] but got shape [60]"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kWeight0] = Tensor(DType::f32, {4, 144});
    CHECK(has(rejection(p), "weight_0: expected rank 3"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices] = Tensor(DType::i32, {10});
    CHECK(has(rejection(p), "router_topk_output_indices: expected shape [T, K] with T = 5"));
    p = plain_problem(G2, Convention::spec);
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {4, 5});
    CHECK(has(rejection(p), "routing_weights: expected shape [4, 5, 1] (dense routing [E, T, 1]; [E, T, 1, 1] and "
                                 "[E, 1, T, 1] are accepted too)"));
    // The rank-4 forms OpenVINO's GEMM3 test builders make hold the same values in the same order.
    for (const Shape& s : {Shape{4, 5, 1, 1}, Shape{4, 1, 5, 1}}) {
        p = plain_problem(G2, Convention::spec);
        const Tensor rw = p.inputs[kRoutingWeights];
        Tensor r4(rw.dtype(), s);
        for (std::size_t i = 0; i < rw.size(); ++i) r4.set(i, rw.get(i));
        p.inputs[kRoutingWeights] = r4;
        CHECK_NOTHROW(validate(p));
    }
    for (const Shape& s : {Shape{4, 5, 2, 1}, Shape{4, 5, 1, 1, 1}, Shape{1, 4, 5, 1}}) {
        p = plain_problem(G2, Convention::spec);
        p.inputs[kRoutingWeights] = Tensor(DType::f32, s);
        CHECK(has(rejection(p), "routing_weights: expected shape [4, 5, 1]"));
    }
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kRoutingWeights] = Tensor(DType::f32, {5, 2, 1});
    CHECK(has(rejection(p), "compact routing must have the shape of router_topk_output_indices [5, 2]"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kBias0] = Tensor(DType::f32, {4, 2, 12});
    CHECK(has(rejection(p), "bias_0: expected shape [4, 1, 12] or [4, 12]"));
}

TEST_CASE("missing, surplus and mistyped inputs") {
    for (const char* name : {kHiddenStates, kRoutingWeights, kTopkIndices, kWeight0, kWeight1}) {
        Problem p = plain_problem(G2, Convention::openvino);
        p.inputs.erase(name);
        CHECK(has(rejection(p), std::string("required input ") + name + " is missing"));
    }
    Problem p = plain_problem(G3, Convention::openvino);
    p.inputs.erase(kWeight2);
    CHECK(has(rejection(p), "required input weight_2 is missing (GEMM3_SWIGLU needs 6 inputs)"));
    p = plain_problem(G3, Convention::openvino);
    p.inputs[kBias0] = Tensor(DType::f32, {4, 6});
    CHECK(has(rejection(p), "bias_0 is given but GEMM3_SWIGLU takes no biases"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kWeight2] = Tensor(DType::f32, {4, 12, 6});
    CHECK(has(rejection(p), "weight_2 is given but GEMM2_BIAS_SWIGLU_CLAMP has two GEMMs"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs["weight_3"] = Tensor(DType::f32, {1});
    CHECK(has(rejection(p), "unknown input weight_3"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kWeight1] = Tensor(DType::f16, {4, 12, 6});
    CHECK(has(rejection(p), "weight_1: element type f16 differs from hidden_states' f32"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kTopkIndices] = Tensor(DType::f32, {5, 2});
    CHECK(has(rejection(p), "router_topk_output_indices: element type f32 is not an index type"));
    p = plain_problem(G2, Convention::openvino);
    p.inputs[kHiddenStates] = Tensor(DType::i32, {5, 12});
    CHECK(has(rejection(p), "hidden_states: element type i32 is not a floating type"));
}

TEST_CASE("attributes out of their domain; unknown enumerations") {
    Problem p = plain_problem(G2, Convention::openvino);
    p.attributes.gate_idx = 2;
    CHECK(has(rejection(p), "gate_idx = 2 (expected 0 or 1)"));
    p = plain_problem(G2, Convention::openvino);
    p.attributes.expert_alpha = -1.0;  // openvino: alpha is the clamp limit
    CHECK(has(rejection(p), "expert_alpha (clamp limit) must be >= 0"));
    p = plain_problem(G2, Convention::spec);
    p.attributes.expert_beta = NAN;  // spec: beta is the clamp limit
    CHECK(has(rejection(p), "expert_beta (clamp limit) must be >= 0"));
    p = plain_problem(G2, Convention::spec);
    p.attributes.gate_idx = 0;
    CHECK(has(rejection(p), "gate_idx is not part of the spec convention"));
    p = plain_problem(G3, Convention::openvino);
    p.attributes.expert_beta = INFINITY;
    CHECK(has(rejection(p), "expert_beta (swish beta) must be finite"));
    CHECK_THROWS_WITH_AS(parse_expert_type("GEMM2_BIAS_GELU"),
                         "unknown expert_type 'GEMM2_BIAS_GELU' (expected GEMM2_BIAS_SWIGLU_CLAMP or GEMM3_SWIGLU)",
                         InputError);
    CHECK_THROWS_WITH_AS(parse_convention("v16"), "unknown convention 'v16' (expected spec or openvino)", InputError);
}

TEST_CASE("shapes whose element count overflows") {
    const std::size_t big = std::size_t(1) << 33;
    CHECK_THROWS_WITH_AS(Tensor(DType::f32, {big, big, 4}), doctest::Contains("more elements than can be addressed"),
                         InputError);
    CHECK_THROWS_WITH_AS(Tensor(DType::f64, {std::size_t(1) << 62}), doctest::Contains("too large"), InputError);
}

TEST_CASE("the mapping between conventions round-trips") {
    for (auto conv : {Convention::spec, Convention::openvino}) {
        const auto a = attributes_for(G2, conv, 1.702, 7.0);
        const auto r = resolve(a);
        CHECK(r.swish_beta == 1.702);
        CHECK(r.clamp_limit == 7.0);
        CHECK(r.gate_lane == (conv == Convention::spec ? 1 : 0));
        CHECK(r.weight_layout == (conv == Convention::spec ? WeightLayout::KN : WeightLayout::NK));
        CHECK(r.routing_layout == (conv == Convention::spec ? RoutingLayout::dense : RoutingLayout::compact));
    }
    CHECK(resolve(attributes_for(G3, Convention::spec, 1.5, 0.0)).weight_layout == WeightLayout::NK);
    CHECK_THROWS_AS(attributes_for(G2, Convention::spec, 1.0, 1.0, 0), InputError);
    // Defaults differ in lanes and layouts but agree on the arithmetic: swish beta 1, clamp 0.
    CHECK_FALSE(resolve(default_attributes(G2, Convention::spec)) == resolve(default_attributes(G2, Convention::openvino)));
    CHECK(resolve(default_attributes(G2, Convention::spec)).swish_beta == 1.0);
    CHECK(resolve(default_attributes(G2, Convention::openvino)).swish_beta == 1.0);
    CHECK(resolve(default_attributes(G2, Convention::spec)).clamp_limit == 0.0);
    CHECK(resolve(default_attributes(G2, Convention::openvino)).clamp_limit == 0.0);
}
