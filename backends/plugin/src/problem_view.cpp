#include "problem_view.hpp"

#include "moe/spec/compression.hpp"
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
        case DType::u8: return MOE_U8;
        case DType::i8: return MOE_I8;
        case DType::u4: return MOE_U4;
        case DType::i4: return MOE_I4;
        case DType::f4e2m1: return MOE_F4E2M1;
        case DType::f8e4m3: return MOE_F8E4M3;
        case DType::f8e5m2: return MOE_F8E5M2;
        case DType::f8e8m0: return MOE_F8E8M0;
    }
    return -1;
}

DType dtype_from_abi(int32_t t) {
    switch (t) {
        case MOE_F64: return DType::f64;
        case MOE_F32: return DType::f32;
        case MOE_F16: return DType::f16;
        case MOE_BF16: return DType::bf16;
        case MOE_I32: return DType::i32;
        case MOE_I64: return DType::i64;
        case MOE_U8: return DType::u8;
        case MOE_I8: return DType::i8;
        case MOE_U4: return DType::u4;
        case MOE_I4: return DType::i4;
        case MOE_F4E2M1: return DType::f4e2m1;
        case MOE_F8E4M3: return DType::f8e4m3;
        case MOE_F8E5M2: return DType::f8e5m2;
        case MOE_F8E8M0: return DType::f8e8m0;
        default: throw InputError("element type code " + std::to_string(t) + " is not one of backend_abi.h's moe_dtype or moe_compressed_dtype");
    }
}

namespace {

// The tensor `name` of p as the ABI sees it; `name` must outlive the view (a key of p.inputs).
moe_tensor_view_v1 tensor_view(const char* name, const Tensor& t) {
    if (t.rank() > MOE_MAX_RANK) throw InputError(std::string(name) + ": rank above the ABI's " + std::to_string(MOE_MAX_RANK));
    moe_tensor_view_v1 v{};
    v.name = name;
    v.dtype = abi_dtype(t.dtype());
    v.rank = static_cast<int32_t>(t.rank());
    for (std::size_t i = 0; i < t.rank(); ++i) v.shape[i] = static_cast<int64_t>(t.shape()[i]);
    v.data = t.data();
    return v;
}

}  // namespace

ProblemView::ProblemView(const Problem& p, bool values_checked)
    : dims_(values_checked ? validate_structure(p) : validate(p)) {
    for (const char* name : kInputNames) {
        if (!p.has(name)) continue;
        const std::optional<WeightCompression> c = weight_compression(p, name);
        if (c) {
            const auto scale = p.inputs.find(std::string(name) + "_scale");
            const auto zero = p.inputs.find(std::string(name) + "_zero_point");
            moe_compressed_weight_v2 w{};
            w.input = static_cast<int32_t>(inputs_.size());
            w.scale = tensor_view(scale->first.c_str(), scale->second);
            if (zero != p.inputs.end()) w.zero_point = tensor_view(zero->first.c_str(), zero->second);
            w.group_size = static_cast<int64_t>(c->group_size);
            w.groups = static_cast<int64_t>(c->groups);
            w.scale_rows = c->scale_rows ? 1 : 0;
            compressed_.push_back(w);
        }
        inputs_.push_back(tensor_view(name, p.input(name)));
    }
    view_.num_compressed = static_cast<int32_t>(compressed_.size());
    view_.compressed = compressed_.empty() ? nullptr : compressed_.data();
    moe_problem_v1& base = view_.base;
    const OpAttributes& a = p.attributes;
    const ResolvedParams r = resolve(a);
    base.case_name = p.name.c_str();
    base.expert_type = a.expert_type == ExpertType::gemm2_bias_swiglu_clamp ? MOE_GEMM2_BIAS_SWIGLU_CLAMP : MOE_GEMM3_SWIGLU;
    base.convention = a.convention == Convention::spec ? MOE_CONVENTION_SPEC : MOE_CONVENTION_OPENVINO;
    base.expert_alpha = a.expert_alpha;
    base.expert_beta = a.expert_beta;
    base.has_gate_idx = a.gate_idx.has_value();
    base.gate_idx = a.gate_idx.value_or(0);
    base.swish_beta = r.swish_beta;
    base.clamp_limit = r.clamp_limit;
    base.gate_lane = r.gate_lane;
    base.weight_layout = r.weight_layout == WeightLayout::KN ? MOE_LAYOUT_KN : MOE_LAYOUT_NK;
    base.routing_layout = r.routing_layout == RoutingLayout::dense ? MOE_ROUTING_DENSE : MOE_ROUTING_COMPACT;
    base.T = static_cast<int64_t>(dims_.T);
    base.H = static_cast<int64_t>(dims_.H);
    base.I = static_cast<int64_t>(dims_.I);
    base.E = static_cast<int64_t>(dims_.E);
    base.K = static_cast<int64_t>(dims_.K);
    base.num_inputs = static_cast<int32_t>(inputs_.size());
    base.inputs = inputs_.data();
}

}  // namespace moe::backends::plugin
