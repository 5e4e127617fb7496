#include "moe/bench/shapes.hpp"

#include <set>

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

generator::CaseSpec spec_for(const Shape& s, std::size_t tokens, DType dtype, const std::string& routing) {
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
    return c;
}

double weight_bytes_touched(const Problem& p) {
    std::set<std::int64_t> used;
    const auto& idx = p.input(kTopkIndices);
    for (std::size_t i = 0; i < idx.size(); ++i) used.insert(idx.get_index(i));
    double per_expert = 0;
    for (const char* w : {kWeight0, kWeight1, kWeight2, kBias0, kBias1})
        if (p.has(w)) per_expert += static_cast<double>(p.input(w).nbytes()) / static_cast<double>(p.input(w).shape()[0]);
    return per_expert * static_cast<double>(used.size());
}

double moe_flops(const Shape& s, std::size_t tokens) {
    return 2.0 * double(tokens) * double(s.topk) * 3.0 * double(s.hidden) * double(s.inter);
}

}  // namespace moe::bench
