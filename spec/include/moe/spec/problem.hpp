#pragma once
// The MOE operation as a problem instance: attributes, the convention that gives them meaning,
// and the input tensors by their op names. spec/README.md is the prose version of this file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "moe/spec/tensor.hpp"

namespace moe {

enum class ExpertType { gemm2_bias_swiglu_clamp, gemm3_swiglu };
// Which reading of expert_alpha/expert_beta, the lane order and the layouts applies
// (spec/errata.md, E1-E5): the seed text ("spec") or the executing code ("openvino").
enum class Convention { spec, openvino };
enum class WeightLayout { KN, NK };        // KN: W[e] is [K, N], y = x W; NK: [N, K], y = x W^T
enum class RoutingLayout { dense, compact };

std::string_view expert_type_name(ExpertType t);   // "GEMM2_BIAS_SWIGLU_CLAMP" | "GEMM3_SWIGLU"
std::string_view convention_name(Convention c);    // "spec" | "openvino"
std::string_view weight_layout_name(WeightLayout l);
std::string_view routing_layout_name(RoutingLayout l);
// Throw InputError naming the accepted values.
ExpertType parse_expert_type(std::string_view s);
Convention parse_convention(std::string_view s);
WeightLayout parse_weight_layout(std::string_view s);
RoutingLayout parse_routing_layout(std::string_view s);

// Attributes as given to the op. gate_idx exists only in the openvino convention.
struct OpAttributes {
    ExpertType expert_type = ExpertType::gemm2_bias_swiglu_clamp;
    Convention convention = Convention::openvino;
    double expert_alpha = 0.0;
    double expert_beta = 1.0;
    std::optional<std::int64_t> gate_idx;
};

// The op's defaults for a convention: spec alpha 1.0 / beta 0.0; openvino alpha 0.0 / beta 1.0.
OpAttributes default_attributes(ExpertType type, Convention convention);

// The arithmetic in unambiguous terms. The one mapping from OpAttributes is resolve().
struct ResolvedParams {
    double swish_beta = 1.0;
    double clamp_limit = 0.0;  // GEMM2 only
    int gate_lane = 0;         // GEMM2 only: 0 = swish/minimum lane on even elements of gate_up
    WeightLayout weight_layout = WeightLayout::NK;
    RoutingLayout routing_layout = RoutingLayout::compact;
    bool operator==(const ResolvedParams& o) const {
        return swish_beta == o.swish_beta && clamp_limit == o.clamp_limit &&
               gate_lane == o.gate_lane && weight_layout == o.weight_layout &&
               routing_layout == o.routing_layout;
    }
};

ResolvedParams resolve(const OpAttributes& a);

// The inverse of resolve() for the arithmetic parameters: the op attributes that express
// (swish_beta, clamp_limit, gate_lane) in a convention. gate_lane absent = the convention's
// own (spec: 1, openvino: 0); the spec convention cannot express gate_lane 0 (InputError).
OpAttributes attributes_for(ExpertType type, Convention convention, double swish_beta, double clamp_limit,
                            std::optional<int> gate_lane = std::nullopt);

// Input names in op order. Which are required depends on the expert type.
inline constexpr const char* kHiddenStates = "hidden_states";
inline constexpr const char* kRoutingWeights = "routing_weights";
inline constexpr const char* kTopkIndices = "router_topk_output_indices";
inline constexpr const char* kWeight0 = "weight_0";
inline constexpr const char* kBias0 = "bias_0";
inline constexpr const char* kWeight1 = "weight_1";
inline constexpr const char* kBias1 = "bias_1";
inline constexpr const char* kWeight2 = "weight_2";
inline constexpr const char* kInputNames[] = {kHiddenStates, kRoutingWeights, kTopkIndices, kWeight0,
                                             kBias0,        kWeight1,        kBias1,       kWeight2};
// A compressed weight's scale and zero point (spec/compressed.md): "<weight>_scale" and
// "<weight>_zero_point". MOECompressed takes them as inputs of their own, as here.
inline constexpr const char* kCompressionInputNames[] = {
    "weight_0_scale", "weight_0_zero_point", "weight_1_scale", "weight_1_zero_point",
    "weight_2_scale", "weight_2_zero_point"};
inline constexpr const char* kWeightNames[] = {kWeight0, kWeight1, kWeight2};
std::string scale_input(const std::string& weight);       // "weight_0" -> "weight_0_scale"
std::string zero_point_input(const std::string& weight);  // "weight_0" -> "weight_0_zero_point"
// One of kInputNames or kCompressionInputNames.
bool is_input_name(const std::string& name);
// One of kCompressionInputNames: a scale or zero point.
bool is_compression_input(const std::string& name);
// One of kWeightNames.
bool is_weight_name(const std::string& name);

struct Problem {
    std::string name;
    OpAttributes attributes;
    std::map<std::string, Tensor> inputs;

    bool has(const std::string& input) const { return inputs.count(input) != 0; }
    const Tensor& input(const std::string& name) const;  // throws InputError if absent
};

// Sizes of a validated problem. T = B * S tokens (B = 1, S = T for rank-2 hidden states).
struct Dims {
    std::size_t T = 0, H = 0, I = 0, E = 0, K = 0;
    std::size_t B = 1, S = 0;
    bool hidden_rank3 = false;
    // Width of the first GEMM's output: 2I for GEMM2 (fused gate_up), I for GEMM3.
    std::size_t first_gemm_width(ExpertType t) const {
        return t == ExpertType::gemm2_bias_swiglu_clamp ? 2 * I : I;
    }
};

// Checks every rule of spec/README.md ("Rejected inputs") before any arithmetic and returns the
// sizes. Throws InputError whose message names the input and the shape or element at fault.
Dims validate(const Problem& p);

// validate() without the scans of compressed weights' parameter values (E8M0 NaN scales, f16 zero
// points out of range), which read O(weights / group size) elements: for a backend's hot path on a
// problem the runner has validated (a decode step must not re-read MXFP4's scales to check them).
// Every shape, type and index rule still holds.
Dims validate_structure(const Problem& p);

}  // namespace moe
