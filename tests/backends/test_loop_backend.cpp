// The loop backend judged by the product's comparison against the f64 reference (outputs and
// stages), its low-precision storage, and every mutant against the correct loop: each must change
// the output far beyond rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "moe/backends/loop_backend.hpp"
#include "conformance_check.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/compression.hpp"
#include "small_cases.hpp"
#include "tensor_compare.hpp"

using namespace moe;
using moe::backends::LoopBackend;
using moe::backends::LoopOptions;
using moe::backends::LoopMutation;
using moe::test::small_problem;
using moe::test::small_spec;

namespace {

const ExpertType kTypes[] = {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu};
const Convention kConventions[] = {Convention::spec, Convention::openvino};

using test::max_abs;

double max_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    return test::max_abs_diff(a, b);
}

Tensor loop_output(const Problem& p, LoopOptions o = {}) { return LoopBackend(o).run(p, false).output; }

// The loop's output judged as moe-conform judges it, with loop_f32's declared precision.
std::string loop_verdict(const Problem& p) {
    return test::verdict(test::golden_case(p), loop_output(p), LoopBackend().precision(p.input(kHiddenStates).dtype()));
}

// The GEMM2 problem where every GEMM2 mutation must show: swish beta 1.702, clamp limit 1.0,
// hidden values ~8 so the clamp and the minimum bite, and every token routed to expert E - 1.
Problem gemm2_mutation_problem() {
    auto spec = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, 12, 6, 4, 2);
    spec.attributes = attributes_for(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 1.702, 1.0);
    generator::Fill big;
    big.kind = generator::Fill::Kind::uniform;
    big.scale = 8.0;
    spec.fills[kHiddenStates] = big;
    spec.routing.always = {3};
    return generator::synthesize(spec);
}

// The same with compressed weights (spec/compressed.md), where every dequantisation mutation must
// show: u4 with zero points and G = 4 groups, or MXFP4 (H = I = 32).
Problem compressed_mutation_problem(DType type) {
    const bool mx = type == DType::f4e2m1;
    auto spec = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, mx ? 32 : 16, mx ? 32 : 16, 4, 2);
    spec.attributes = attributes_for(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 1.702, 7.0);
    generator::CompressionSpec cs;
    cs.type = type;
    cs.group_size = mx ? kMxBlock : 4;
    cs.scale_dtype = mx ? DType::f8e8m0 : DType::f16;
    cs.zero_point = mx ? generator::CompressionSpec::ZeroPoint::none : generator::CompressionSpec::ZeroPoint::weight_type;
    spec.compression = cs;
    return generator::synthesize(spec);
}

bool is_dequantisation_mutant(const std::string& name) {
    return name == "zero_point_sign_flipped" || name == "nibble_order_swapped" || name == "next_group_scale" ||
           name == "channel_scale_for_groups" || name == "e8m0_bias_off_by_one" ||
           name == "u4_zero_point_sign_extended";  // the u4 problem's zero points span all 16 codes
}

}  // namespace

TEST_CASE("loop_f32 passes the conformance comparison for both expert types, conventions and data types") {
    for (ExpertType type : kTypes)
        for (Convention conv : kConventions)
            for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
                CAPTURE(expert_type_name(type));
                CAPTURE(convention_name(conv));
                CAPTURE(dtype_name(dt));
                const Problem p = small_problem(type, conv, 5, 12, 6, 4, 2, dt);
                CHECK(loop_output(p).dtype() == dt);
                CHECK(loop_verdict(p) == "PASS");
            }
}

TEST_CASE("loop_f32 reads rank-3 hidden states with [B, S, K] indices") {
    for (ExpertType type : kTypes)
        for (Convention conv : kConventions) {
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            auto spec = small_spec(type, conv, 3, 12, 6, 4, 2);
            spec.rank3 = true;
            spec.batch = 2;
            spec.seq = 3;
            spec.indices_bsk = true;
            const Problem p = generator::synthesize(spec);
            REQUIRE(p.input(kTopkIndices).shape() == Shape{2, 3, 2});
            CHECK(loop_output(p).shape() == Shape{2, 3, 12});
            CHECK(loop_verdict(p) == "PASS");
        }
}

TEST_CASE("loop_f32 takes i64 indices, [E, N] biases and absent biases") {
    auto spec = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino);
    spec.index_dtype = DType::i64;
    spec.bias_rank2 = true;
    const Problem with_bias = generator::synthesize(spec);
    REQUIRE(with_bias.input(kBias0).rank() == 2);
    CHECK(LoopBackend().supports(with_bias).supported);
    CHECK(loop_verdict(with_bias) == "PASS");

    spec.bias_0 = spec.bias_1 = false;
    const Problem no_bias = generator::synthesize(spec);
    REQUIRE_FALSE(no_bias.has(kBias0));
    CHECK(loop_verdict(no_bias) == "PASS");
}

TEST_CASE("names, descriptions and declared precision") {
    LoopBackend f32;
    LoopBackend lowp({true, LoopMutation::none});
    CHECK(f32.name() == "loop_f32");
    CHECK(lowp.name() == "loop_lowp");
    CHECK_FALSE(f32.description().empty());
    CHECK(f32.description() != lowp.description());
    CHECK(f32.provides_stages());
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
        CHECK(f32.precision(dt).compute == DType::f32);
        CHECK(f32.precision(dt).storage == DType::f32);
        CHECK(lowp.precision(dt).compute == DType::f32);
    }
    CHECK(lowp.precision(DType::f16).storage == DType::f16);
    CHECK(lowp.precision(DType::bf16).storage == DType::bf16);
    CHECK(lowp.precision(DType::f32).storage == DType::f32);
    CHECK(lowp.precision(DType::f64).storage == DType::f32);
    // The f16_accumulation mutant's bug is that it declares f32.
    CHECK(LoopBackend({false, LoopMutation::f16_accumulation}).precision(DType::f32).compute == DType::f32);
}

TEST_CASE("stages: names and shapes of the reference's, values within its stage bounds") {
    for (ExpertType type : kTypes)
        for (Convention conv : kConventions) {
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            const std::size_t T = 5, H = 12, I = 6, K = 2;
            const Problem p = small_problem(type, conv, T, H, I, 4, K);
            const auto out = LoopBackend().run(p, true);
            const auto c = test::golden_case(p, true);
            const bool gemm2 = type == ExpertType::gemm2_bias_swiglu_clamp;
            const std::vector<std::string> names = gemm2 ? std::vector<std::string>{"act", "down", "gate_up"}
                                                         : std::vector<std::string>{"act", "down", "gate", "up"};
            std::vector<std::string> got;
            for (const auto& [name, t] : out.stages) got.push_back(name);
            CHECK(got == names);  // std::map: sorted
            for (const auto& name : names) {
                CAPTURE(name);
                const Tensor& s = out.stages.at(name);
                const std::size_t width = name == "down" ? H : (name == "gate_up" ? 2 * I : I);
                CHECK(s.dtype() == DType::f32);
                CHECK(s.shape() == Shape{T, K, width});
                REQUIRE(c.stages.at(name).shape() == s.shape());
            }
            CHECK(test::stage_verdict(c, out.stages, LoopBackend().precision(DType::f32)) == "PASS");
            CHECK(LoopBackend().run(p, false).stages.empty());
        }
}

TEST_CASE("loop_lowp keeps its stages in the data type and passes the comparison for its precision") {
    for (ExpertType type : kTypes)
        for (Convention conv : kConventions)
            for (DType dt : {DType::f16, DType::bf16}) {
                CAPTURE(expert_type_name(type));
                CAPTURE(convention_name(conv));
                CAPTURE(dtype_name(dt));
                const Problem p = small_problem(type, conv, 5, 12, 6, 4, 2, dt);
                LoopBackend lowp({true, LoopMutation::none});
                const auto out = lowp.run(p, true);
                REQUIRE(out.stages.size() == (type == ExpertType::gemm2_bias_swiglu_clamp ? 3u : 4u));
                std::size_t not_representable = 0;
                for (const auto& [name, s] : out.stages)
                    for (double v : s.to_f64()) not_representable += round_to(dt, v) != v;
                CHECK(not_representable == 0);
                // Rounding the stages really happened: loop_f32's stages are not all representable.
                std::size_t f32_not_representable = 0;
                for (const auto& [name, s] : LoopBackend().run(p, true).stages)
                    for (double v : s.to_f64()) f32_not_representable += round_to(dt, v) != v;
                CHECK(f32_not_representable > 0);

                CHECK(out.output.dtype() == dt);
                const auto c = test::golden_case(p, true);
                CHECK(test::verdict(c, out.output, lowp.precision(dt)) == "PASS");
                CHECK(test::stage_verdict(c, out.stages, lowp.precision(dt)) == "PASS");
            }
}

TEST_CASE("the loop mutants: 48 mutations, unique names, mutant:<name>") {
    const auto mutants = backends::loop_mutants();
    const std::vector<std::string> expected = {
        "lanes_swapped", "alpha_beta_swapped", "plus_one_dropped", "clamp_lower_dropped", "zero_limit_unclamped",
        "clamp_nan_dropped", "gate_nan_capped", "minimum_dropped", "bias0_dropped", "bias1_dropped", "swish_beta_one",
        "routing_slot_shifted", "last_expert_ignored", "token_output_to_neighbour", "gemm3_up_ignored",
        "f16_accumulation", "hidden_off_by_one", "lowp_output_truncated", "small_weight_routes_skipped",
        "subnormal_weights_flushed", "subnormal_gemm_weights_flushed", "tf32_gemm_inputs", "bias1_after_routing",
        "topk_capped_at_4", "experts_from_32_ignored", "gemm3_gate_idx_swapped", "hidden_subnormals_flushed",
        "negative_weight_routes_skipped", "zero_point_sign_flipped", "nibble_order_swapped", "next_group_scale", "channel_scale_for_groups",
        "e8m0_bias_off_by_one", "fp8_subnormals_flushed", "e4m3_nan_as_number", "odd_group_scale_dropped",
        "e5m2_inf_saturated", "e5m2_nan_as_inf", "e8m0_zero_code_flushed", "e4m3_negative_nan_as_number",
        "swish_exp_overflow", "expert_tail_rows_dropped", "experts_from_128_ignored", "u4_zero_point_sign_extended",
        "row_scale_read_per_tensor", "u4_scales_read_as_f16", "group_size_from_weight_0",
        "lowp_intermediates_truncated"};
    REQUIRE(mutants.size() == expected.size());
    std::set<std::string> names;
    for (std::size_t i = 0; i < mutants.size(); ++i) {
        CHECK(mutants[i].name == expected[i]);
        CHECK(mutants[i].family == "loop");
        CHECK_FALSE(mutants[i].description.empty());
        names.insert(mutants[i].name);
        const auto mutant = mutants[i].make();
        CHECK(mutant->name() == "mutant:" + mutants[i].name);
        CHECK(mutant->description() == mutants[i].description);
    }
    CHECK(names.size() == expected.size());
}

TEST_CASE("every mutant changes the output of a problem where its mistake matters") {
    const Problem gemm2 = gemm2_mutation_problem();
    // Every token selects expert E - 1, and T >= 2: last_expert_ignored and
    // token_output_to_neighbour must show.
    REQUIRE(gemm2.input(kHiddenStates).shape()[0] >= 2);
    const Problem gemm3 = small_problem(ExpertType::gemm3_swiglu, Convention::openvino);
    const Tensor good2 = loop_output(gemm2), good3 = loop_output(gemm3);

    for (const auto& m : backends::loop_mutants()) {
        CAPTURE(m.name);
        if (m.name == "f16_accumulation") continue;  // below, on a problem of its own
        // Their mistakes show only on the cases of their classes (test_power_classes.cpp).
        const std::set<std::string> power = {"lowp_output_truncated", "lowp_intermediates_truncated",
                                             "small_weight_routes_skipped",
                                             "subnormal_weights_flushed", "subnormal_gemm_weights_flushed",
                                             "tf32_gemm_inputs", "bias1_after_routing", "zero_limit_unclamped", "clamp_nan_dropped",
                                             "gate_nan_capped", "fp8_subnormals_flushed", "e4m3_nan_as_number",
                                             "e5m2_inf_saturated", "e5m2_nan_as_inf", "e8m0_zero_code_flushed",
                                             "e4m3_negative_nan_as_number"};
        if (power.count(m.name)) continue;
        // Theirs need K > 4, E > 32, GEMM3 with gate_idx 1 or an odd group count (the next test case),
        // f16/bf16 subnormal hidden states or a negative routing weight (the one after).
        const std::set<std::string> shaped = {"topk_capped_at_4", "experts_from_32_ignored", "gemm3_gate_idx_swapped",
                                              "odd_group_scale_dropped", "hidden_subnormals_flushed",
                                              "negative_weight_routes_skipped", "swish_exp_overflow",
                                              "expert_tail_rows_dropped", "experts_from_128_ignored",
                                              "row_scale_read_per_tensor", "u4_scales_read_as_f16",
                                              "group_size_from_weight_0"};
        if (shaped.count(m.name)) continue;
        if (is_dequantisation_mutant(m.name)) {
            const Problem c = compressed_mutation_problem(m.name == "e8m0_bias_off_by_one" ? DType::f4e2m1 : DType::u4);
            const Tensor good_c = loop_output(c);
            CHECK(max_diff(m.make()->run(c, false).output, good_c) > 1e-2 * max_abs(good_c));
            // ... and nothing changes where the mistake cannot matter: weights in the data type.
            CHECK(max_diff(m.make()->run(gemm2, false).output, good2) == 0.0);
            continue;
        }
        const bool on_gemm3 = m.name == "gemm3_up_ignored";
        const Problem& p = on_gemm3 ? gemm3 : gemm2;
        const Tensor& good = on_gemm3 ? good3 : good2;
        const double diff = max_diff(m.make()->run(p, false).output, good);
        // f32 rounding moves outputs by ~1e-6 relative; a mutation by percent.
        CHECK(diff > 1e-2 * max_abs(good));
    }
}

TEST_CASE("the routing-width, GEMM3 gate_idx and odd-group mutants show where their mistakes matter, and only there") {
    // K = 8 of E = 64 experts, every token routed to expert 40: topk_capped_at_4, experts_from_32_ignored.
    auto wide = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 12, 6, 64, 8);
    wide.routing.always = {40};
    // GEMM3 with gate_idx 1, which has no effect on GEMM3: gemm3_gate_idx_swapped.
    auto gate1 = small_spec(ExpertType::gemm3_swiglu, Convention::openvino);
    gate1.attributes.gate_idx = 1;
    // u4 with zero points in 3 groups of 8 for both GEMMs: odd_group_scale_dropped.
    auto odd = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, 24, 24, 4, 2);
    generator::CompressionSpec cs;
    cs.type = DType::u4;
    cs.group_size = 8;
    cs.scale_dtype = DType::f16;
    cs.zero_point = generator::CompressionSpec::ZeroPoint::weight_type;
    odd.compression = cs;
    const std::vector<std::pair<LoopMutation, generator::CaseSpec>> shows = {
        {LoopMutation::topk_capped_at_4, wide},
        {LoopMutation::experts_from_32_ignored, wide},
        {LoopMutation::gemm3_gate_idx_swapped, gate1},
        {LoopMutation::odd_group_scale_dropped, odd}};
    // Where none of the four mistakes can matter: K = 2 of E = 4, gate_idx 0, G = 4 groups.
    const Problem gemm2 = gemm2_mutation_problem(), gemm3 = small_problem(ExpertType::gemm3_swiglu, Convention::openvino),
                  even = compressed_mutation_problem(DType::u4);
    for (const auto& [m, spec] : shows) {
        CAPTURE(static_cast<int>(m));
        const Problem p = generator::synthesize(spec);
        const Tensor good = loop_output(p);
        CHECK(max_diff(loop_output(p, {false, m}), good) > 1e-2 * max_abs(good));
        for (const Problem* q : {&gemm2, &gemm3, &even}) CHECK(max_diff(loop_output(*q, {false, m}), loop_output(*q)) == 0.0);
    }
}

TEST_CASE("the subnormal-hidden and negative-weight mutants show where their mistakes matter, and only there") {
    // f16 hidden states uniform up to 2^-13 (about half of them f16 subnormals) against gate and up
    // weights up to 4096, as the bundled subnormal_hidden_f16: hidden_subnormals_flushed.
    auto tiny = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 16, 8, 4, 2, DType::f16);
    generator::Fill x, w;
    x.kind = w.kind = generator::Fill::Kind::uniform;
    x.scale = std::ldexp(1.0, -13);
    w.scale = 4096.0;
    tiny.fills[kHiddenStates] = x;
    tiny.fills[kWeight0] = w;
    tiny.fills[kWeight1] = w;
    // Negative routing weights on three of the six tokens, as route_negative_weights:
    // negative_weight_routes_skipped.
    auto negative = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, 12, 6, 4, 2, DType::bf16);
    negative.overrides = {{kRoutingWeights, {0, 0}, -0.5}, {kRoutingWeights, {1, 1}, -1.0}, {kRoutingWeights, {2, 0}, -2.0}};
    const std::vector<std::pair<LoopMutation, generator::CaseSpec>> shows = {
        {LoopMutation::hidden_subnormals_flushed, tiny}, {LoopMutation::negative_weight_routes_skipped, negative}};
    // Where neither mistake can matter: f32 data (the mutant flushes f16/bf16 subnormals only), f16
    // hidden states of order 1, and non-negative routing weights throughout.
    const Problem gemm2 = gemm2_mutation_problem(), gemm3 = small_problem(ExpertType::gemm3_swiglu, Convention::openvino),
                  half = small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 5, 12, 6, 4, 2, DType::f16);
    for (const auto& [m, spec] : shows) {
        CAPTURE(static_cast<int>(m));
        const Problem p = generator::synthesize(spec);
        const Tensor good = loop_output(p);
        CHECK(max_diff(loop_output(p, {false, m}), good) > 1e-2 * max_abs(good));
        for (const Problem* q : {&gemm2, &gemm3, &half}) CHECK(max_diff(loop_output(*q, {false, m}), loop_output(*q)) == 0.0);
    }
}

TEST_CASE("the second hunt's mutants show where their mistakes matter, and only there") {
    // GEMM3 with hidden states up to 300, gates far beyond 88.7: swish_exp_overflow gives NaN.
    auto large = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 4, 16, 8, 2, 1);
    generator::Fill x;
    x.kind = generator::Fill::Kind::uniform;
    x.scale = 300.0;
    large.fills[kHiddenStates] = x;
    const Tensor overflowed = loop_output(generator::synthesize(large), {false, LoopMutation::swish_exp_overflow});
    const std::vector<double> o = overflowed.to_f64();
    CHECK(std::any_of(o.begin(), o.end(), [](double v) { return std::isnan(v); }));
    // Expert 0 on all 70 tokens (one 64-row tile and a tail of 6): expert_tail_rows_dropped.
    auto hot = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 70, 12, 6, 4, 2);
    hot.routing.always = {0};
    // E = 160, every token routed to expert 140: experts_from_128_ignored.
    auto wide = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 12, 6, 160, 2);
    wide.routing.always = {140};
    // FP8 weights with one scale row per expert in 4 groups: row_scale_read_per_tensor.
    auto row = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 16, 16, 4, 2);
    generator::CompressionSpec fp8;
    fp8.type = DType::f8e4m3;
    fp8.group_size = 4;
    fp8.scale_dtype = DType::f32;
    fp8.scale_layout = generator::CompressionSpec::ScaleLayout::E1G;
    row.compression = fp8;
    // u4 with bf16 scales on bf16 data: u4_scales_read_as_f16.
    auto bf16_scales = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 16, 16, 4, 2, DType::bf16);
    generator::CompressionSpec u4;
    u4.type = DType::u4;
    u4.group_size = 8;
    u4.scale_dtype = DType::bf16;
    bf16_scales.compression = u4;
    const std::vector<std::pair<LoopMutation, generator::CaseSpec>> shows = {
        {LoopMutation::expert_tail_rows_dropped, hot},
        {LoopMutation::experts_from_128_ignored, wide},
        {LoopMutation::row_scale_read_per_tensor, row},
        {LoopMutation::u4_scales_read_as_f16, bf16_scales}};
    // Where none of the mistakes can matter: at most 64 rows per expert, E = 4, gates below 88,
    // u4 with f16 scales [E, N, G] (the swish rewrite there differs by f32 rounding alone).
    const Problem gemm2 = gemm2_mutation_problem(), gemm3 = small_problem(ExpertType::gemm3_swiglu, Convention::openvino),
                  even = compressed_mutation_problem(DType::u4);
    for (const Problem* q : {&gemm2, &gemm3, &even}) {
        const Tensor good = loop_output(*q);
        CHECK(max_diff(loop_output(*q, {false, LoopMutation::swish_exp_overflow}), good) <= 1e-5 * max_abs(good));
    }
    for (const auto& [m, spec] : shows) {
        CAPTURE(static_cast<int>(m));
        const Problem p = generator::synthesize(spec);
        const Tensor good = loop_output(p);
        CHECK(max_diff(loop_output(p, {false, m}), good) > 1e-2 * max_abs(good));
        for (const Problem* q : {&gemm2, &gemm3, &even}) CHECK(max_diff(loop_output(*q, {false, m}), loop_output(*q)) == 0.0);
    }
}

TEST_CASE("group_size_from_weight_0 shows where the weights' group sizes differ, and only there") {
    // u8 with zero points: GEMM3 with the down weight in groups of 16 against 4 for gate and up,
    // GEMM2 with the down weight in groups of 4 against 8 for gate_up (H = 16, I = 32).
    generator::CompressionSpec u8;
    u8.type = DType::u8;
    u8.zero_point = generator::CompressionSpec::ZeroPoint::weight_type;
    auto gemm3 = small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 6, 16, 32, 4, 2);
    u8.group_sizes = {{kWeight0, 4}, {kWeight1, 4}, {kWeight2, 16}};
    gemm3.compression = u8;
    auto gemm2 = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, 16, 32, 4, 2);
    gemm2.attributes = attributes_for(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 1.702, 7.0);
    u8.group_sizes = {{kWeight0, 8}, {kWeight1, 4}};
    gemm2.compression = u8;
    for (const auto* spec : {&gemm3, &gemm2}) {
        const Problem p = generator::synthesize(*spec);
        const Tensor good = loop_output(p);
        CHECK(max_diff(loop_output(p, {false, LoopMutation::group_size_from_weight_0}), good) > 1e-2 * max_abs(good));
    }
    // One group size for every weight (and per channel, where K differs: I = 32 against H = 16):
    // weight_0's is every weight's own, so nothing changes.
    u8.group_sizes = {};
    for (std::size_t gs : {4, 0}) {
        u8.group_size = gs;
        gemm3.compression = u8;
        const Problem p = generator::synthesize(gemm3);
        CHECK(max_diff(loop_output(p, {false, LoopMutation::group_size_from_weight_0}), loop_output(p)) == 0.0);
    }
    const Problem even = compressed_mutation_problem(DType::u4);
    CHECK(max_diff(loop_output(even, {false, LoopMutation::group_size_from_weight_0}), loop_output(even)) == 0.0);
}

TEST_CASE("the f16_accumulation mutant differs far more than f32 rounding on a long dot product") {
    auto spec = small_spec(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 4, 512, 16, 4, 2);
    const Problem p = generator::synthesize(spec);
    const Tensor ref = reference::run(p).output;
    const Tensor good = loop_output(p);
    const Tensor bad = loop_output(p, {false, LoopMutation::f16_accumulation});
    const double f32_error = max_diff(good, ref);
    const double f16_error = max_diff(bad, good);
    CAPTURE(f32_error);
    CAPTURE(f16_error);
    CHECK(f16_error > 50.0 * f32_error);
    CHECK(f16_error > 1e-3 * max_abs(ref));
    // ... and the comparison catches it, although it declares f32 arithmetic.
    const LoopBackend mutant({false, LoopMutation::f16_accumulation});
    CHECK(test::verdict(test::golden_case(p), bad, mutant.precision(DType::f32)) != "PASS");
}

TEST_CASE("mutants apply to the stages too") {
    const Problem p = gemm2_mutation_problem();
    const auto good = LoopBackend().run(p, true).stages;
    const auto bad = LoopBackend({false, LoopMutation::bias0_dropped}).run(p, true).stages;
    CHECK(max_diff(good.at("gate_up"), bad.at("gate_up")) > 0.1);
    const auto swapped = LoopBackend({false, LoopMutation::lanes_swapped}).run(p, true).stages;
    CHECK(max_diff(good.at("gate_up"), swapped.at("gate_up")) == 0.0);  // same GEMM, different activation
    CHECK(max_diff(good.at("act"), swapped.at("act")) > 0.1);
}
