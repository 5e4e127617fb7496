#include "problem_view.hpp"

#include "moe/spec/error.hpp"

namespace moe::backends::plugin {

int32_t abi_dtype(DType t) {
    switch (t) {
        case DType::f64: return MOE_F64;
        case DType::f32: return MOE_F32;
        case DType::f16: return MOE_F16;
        case DType::bf16: return MOE_BF16;
        case DType::i32: return MOE_I32;
        case DType::i64: return MOE_I64;
        default: return -1;  // compressed element types: not in ABI version 1
    }
}

DType dtype_from_abi(int32_t t) {
    switch (t) {
        case MOE_F64: return DType::f64;
        case MOE_F32: return DType::f32;
        case MOE_F16: return DType::f16;
        case MOE_BF16: return DType::bf16;
        case MOE_I32: return DType::i32;
        case MOE_I64: return DType::i64;
        default: throw InputError("element type code " + std::to_string(t) + " is not one of backend_abi.h's moe_dtype");
    }
}

ProblemView::ProblemView(const Problem& p) : dims_(validate(p)) {
    for (const char* name : kInputNames) {
        if (!p.has(name)) continue;
        const Tensor& t = p.input(name);
        if (t.rank() > MOE_MAX_RANK) throw InputError(std::string(name) + ": rank above the ABI's " + std::to_string(MOE_MAX_RANK));
        moe_tensor_view_v1 v{};
        v.name = name;
        v.dtype = abi_dtype(t.dtype());
        v.rank = static_cast<int32_t>(t.rank());
        for (std::size_t i = 0; i < t.rank(); ++i) v.shape[i] = static_cast<int64_t>(t.shape()[i]);
        v.data = t.data();
        inputs_.push_back(v);
    }
    const OpAttributes& a = p.attributes;
    const ResolvedParams r = resolve(a);
    view_.case_name = p.name.c_str();
    view_.expert_type = a.expert_type == ExpertType::gemm2_bias_swiglu_clamp ? MOE_GEMM2_BIAS_SWIGLU_CLAMP : MOE_GEMM3_SWIGLU;
    view_.convention = a.convention == Convention::spec ? MOE_CONVENTION_SPEC : MOE_CONVENTION_OPENVINO;
    view_.expert_alpha = a.expert_alpha;
    view_.expert_beta = a.expert_beta;
    view_.has_gate_idx = a.gate_idx.has_value();
    view_.gate_idx = a.gate_idx.value_or(0);
    view_.swish_beta = r.swish_beta;
    view_.clamp_limit = r.clamp_limit;
    view_.gate_lane = r.gate_lane;
    view_.weight_layout = r.weight_layout == WeightLayout::KN ? MOE_LAYOUT_KN : MOE_LAYOUT_NK;
    view_.routing_layout = r.routing_layout == RoutingLayout::dense ? MOE_ROUTING_DENSE : MOE_ROUTING_COMPACT;
    view_.T = static_cast<int64_t>(dims_.T);
    view_.H = static_cast<int64_t>(dims_.H);
    view_.I = static_cast<int64_t>(dims_.I);
    view_.E = static_cast<int64_t>(dims_.E);
    view_.K = static_cast<int64_t>(dims_.K);
    view_.num_inputs = static_cast<int32_t>(inputs_.size());
    view_.inputs = inputs_.data();
}

}  // namespace moe::backends::plugin
