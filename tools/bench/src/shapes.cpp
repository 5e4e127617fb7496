#include "moe/bench/shapes.hpp"

#include <set>

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::bench {

const std::vector<Shape>& named_shapes() {
    static const std::vector<Shape> s = {
        {"gpt-oss-20b", ExpertType::gemm2_bias_swiglu_clamp, 2880, 2880, 32, 4},
        {"qwen3-30b-a3b", ExpertType::gemm3_swiglu, 2048, 768, 128, 8},
        {"mixtral", ExpertType::gemm3_swiglu, 4096, 14336, 8, 2},
    };
    return s;
}

std::vector<Shape> select_shapes(const std::string& name) {
    std::vector<Shape> out;
    for (const auto& s : named_shapes())
        if (name == "all" || name == s.name) out.push_back(s);
    if (out.empty()) throw InputError("unknown shape '" + name + "' (gpt-oss-20b, qwen3-30b-a3b, mixtral, all)");
    return out;
}

const std::vector<std::string>& compressed_presets() {
    static const std::vector<std::string> names = {"u4", "i4", "u8", "i8", "mxfp4", "f8e4m3", "f8e5m2"};
    return names;
}

generator::CompressionSpec compression_preset(const std::string& name, const Shape& s) {
    using ZP = generator::CompressionSpec::ZeroPoint;
    generator::CompressionSpec c;
    if (name == "u4" || name == "i4") {
        c.type = name == "u4" ? DType::u4 : DType::i4;
        c.group_size = s.hidden % 128 == 0 && s.inter % 128 == 0 ? 128 : 32;
        c.scale_dtype = DType::f16;
        c.zero_point = name == "u4" ? ZP::weight_type : ZP::none;
    } else if (name == "u8" || name == "i8") {
        c.type = name == "u8" ? DType::u8 : DType::i8;
        c.scale_dtype = DType::f16;
        c.zero_point = name == "u8" ? ZP::weight_type : ZP::none;
    } else if (name == "mxfp4") {
        c.type = DType::f4e2m1;
        c.group_size = kMxBlock;
        c.scale_dtype = DType::f8e8m0;
    } else if (name == "f8e4m3" || name == "f8e5m2") {
        c.type = name == "f8e4m3" ? DType::f8e4m3 : DType::f8e5m2;
        c.scale_dtype = DType::f32;
    } else {
        std::string known;
        for (const auto& n : compressed_presets()) known += (known.empty() ? "" : ", ") + n;
        throw InputError("unknown --weights '" + name + "' (" + known + ")");
    }
    return c;
}

std::string compression_label(const std::string& name, const Shape& s) {
    const generator::CompressionSpec c = compression_preset(name, s);
    return c.type == DType::u4 || c.type == DType::i4 ? name + "/g" + std::to_string(c.group_size) : name;
}

generator::CaseSpec spec_for(const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                             const std::string& weights) {
    generator::CaseSpec c;
    c.name = s.name;
    c.attributes = attributes_for(s.type, Convention::openvino, s.type == ExpertType::gemm3_swiglu ? 1.0 : 1.702, 7.0);
    c.seq = tokens;
    c.hidden = s.hidden;
    c.inter = s.inter;
    c.experts = s.experts;
    c.topk = s.topk;
    c.dtype = dtype;
    c.seed = 42;
    c.fills[kHiddenStates] = {generator::Fill::Kind::uniform, 4.0};
    if (routing == "skewed") c.routing.skew = 1.2;
    if (routing == "hot") c.routing.always = {0};
    if (!weights.empty()) c.compression = compression_preset(weights, s);
    return c;
}

double weight_bytes_touched(const Problem& p) {
    std::set<std::int64_t> used;
    const auto& idx = p.input(kTopkIndices);
    for (std::size_t i = 0; i < idx.size(); ++i) used.insert(idx.get_index(i));
    double per_expert = 0;
    for (const auto& [name, t] : p.inputs)  // every input but the per-token ones is per expert
        if (name != kHiddenStates && name != kRoutingWeights && name != kTopkIndices)
            per_expert += static_cast<double>(t.nbytes()) / static_cast<double>(t.shape()[0]);
    return per_expert * static_cast<double>(used.size());
}

double moe_flops(const Shape& s, std::size_t tokens) {
    return 2.0 * double(tokens) * double(s.topk) * 3.0 * double(s.hidden) * double(s.inter);
}

}  // namespace moe::bench
