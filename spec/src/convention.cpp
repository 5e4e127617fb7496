// The one place where op attributes get their meaning (spec/errata.md E1-E3, E5).
#include <cmath>
#include <string>

#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe {

std::string_view expert_type_name(ExpertType t) {
    return t == ExpertType::gemm2_bias_swiglu_clamp ? "GEMM2_BIAS_SWIGLU_CLAMP" : "GEMM3_SWIGLU";
}
std::string_view convention_name(Convention c) { return c == Convention::spec ? "spec" : "openvino"; }
std::string_view weight_layout_name(WeightLayout l) { return l == WeightLayout::KN ? "KN" : "NK"; }
std::string_view routing_layout_name(RoutingLayout l) {
    return l == RoutingLayout::dense ? "dense" : "compact";
}

ExpertType parse_expert_type(std::string_view s) {
    if (s == "GEMM2_BIAS_SWIGLU_CLAMP") return ExpertType::gemm2_bias_swiglu_clamp;
    if (s == "GEMM3_SWIGLU") return ExpertType::gemm3_swiglu;
    throw InputError("unknown expert_type '" + std::string(s) +
                     "' (expected GEMM2_BIAS_SWIGLU_CLAMP or GEMM3_SWIGLU)");
}
Convention parse_convention(std::string_view s) {
    if (s == "spec") return Convention::spec;
    if (s == "openvino") return Convention::openvino;
    throw InputError("unknown convention '" + std::string(s) + "' (expected spec or openvino)");
}
WeightLayout parse_weight_layout(std::string_view s) {
    if (s == "KN") return WeightLayout::KN;
    if (s == "NK") return WeightLayout::NK;
    throw InputError("unknown weight_layout '" + std::string(s) + "' (expected KN or NK)");
}
RoutingLayout parse_routing_layout(std::string_view s) {
    if (s == "dense") return RoutingLayout::dense;
    if (s == "compact") return RoutingLayout::compact;
    throw InputError("unknown routing_layout '" + std::string(s) + "' (expected dense or compact)");
}

OpAttributes default_attributes(ExpertType type, Convention convention) {
    OpAttributes a;
    a.expert_type = type;
    a.convention = convention;
    if (convention == Convention::spec) {
        a.expert_alpha = 1.0;  // seed text: swish beta
        a.expert_beta = 0.0;   // seed text: clamp limit
    } else {
        a.expert_alpha = 0.0;  // code: clamp limit
        a.expert_beta = 1.0;   // code: swish beta
        a.gate_idx = 0;        // code: GPT-OSS layout, swish lane on even elements
    }
    return a;
}

ResolvedParams resolve(const OpAttributes& a) {
    ResolvedParams r;
    const bool gemm2 = a.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    if (a.convention == Convention::spec) {
        if (a.gate_idx)
            throw InputError("attribute gate_idx is not part of the spec convention "
                             "(its lane order is fixed: swish lane = gate_up[..., 1::2])");
        r.swish_beta = a.expert_alpha;
        r.clamp_limit = gemm2 ? a.expert_beta : 0.0;
        r.gate_lane = gemm2 ? 1 : 0;
        r.weight_layout = gemm2 ? WeightLayout::KN : WeightLayout::NK;
        r.routing_layout = RoutingLayout::dense;
    } else {
        const std::int64_t g = a.gate_idx.value_or(0);
        if (g != 0 && g != 1)
            throw InputError("attribute gate_idx = " + std::to_string(g) + " (expected 0 or 1)");
        r.swish_beta = a.expert_beta;
        r.clamp_limit = gemm2 ? a.expert_alpha : 0.0;
        r.gate_lane = gemm2 ? static_cast<int>(g) : 0;
        r.weight_layout = WeightLayout::NK;
        r.routing_layout = RoutingLayout::compact;
    }
    const char* beta_attr = a.convention == Convention::spec ? "expert_alpha" : "expert_beta";
    const char* limit_attr = a.convention == Convention::spec ? "expert_beta" : "expert_alpha";
    if (!std::isfinite(r.swish_beta))
        throw InputError(std::string("attribute ") + beta_attr + " (swish beta) must be finite, got " +
                         std::to_string(r.swish_beta));
    if (gemm2 && !(r.clamp_limit >= 0.0))  // also rejects NaN
        throw InputError(std::string("attribute ") + limit_attr +
                         " (clamp limit) must be >= 0 (clamp(x, -L, L) needs -L <= L), got " +
                         std::to_string(r.clamp_limit));
    return r;
}

OpAttributes attributes_for(ExpertType type, Convention convention, double swish_beta, double clamp_limit,
                            std::optional<int> gate_lane) {
    OpAttributes a = default_attributes(type, convention);
    const bool gemm2 = type == ExpertType::gemm2_bias_swiglu_clamp;
    if (convention == Convention::spec) {
        if (gemm2 && gate_lane && *gate_lane != 1)
            throw InputError("the spec convention fixes the swish lane to gate_up[..., 1::2] (gate_lane 1); "
                             "gate_lane " + std::to_string(*gate_lane) + " needs the openvino convention");
        a.expert_alpha = swish_beta;
        if (gemm2) a.expert_beta = clamp_limit;
    } else {
        a.expert_beta = swish_beta;
        if (gemm2) a.expert_alpha = clamp_limit;
        a.gate_idx = gemm2 ? gate_lane.value_or(0) : 0;
    }
    return a;
}

}  // namespace moe
