#pragma once
// The MoE layers moe-bench times: three model shapes (or one custom) and the synthetic problem of
// each at a token count, data type and routing.
#include <cstddef>
#include <string>
#include <vector>

#include "moe/generator/case_spec.hpp"
#include "moe/spec/problem.hpp"

namespace moe::bench {

struct Shape {
    std::string name;
    ExpertType type;
    std::size_t hidden, inter, experts, topk;
};

// gpt-oss-20b, qwen3-30b-a3b, mixtral.
const std::vector<Shape>& named_shapes();

// `name` of named_shapes(), or "all". Throws InputError naming the known shapes otherwise.
std::vector<Shape> select_shapes(const std::string& name);

// The case moe-bench synthesises: uniform inputs, fixed seed; routing uniform, skewed (Zipf 1.2)
// or hot (expert 0 in every token).
generator::CaseSpec spec_for(const Shape& s, std::size_t tokens, DType dtype, const std::string& routing);

// The bytes of weights and biases of the experts the problem's routing uses.
double weight_bytes_touched(const Problem& p);

// The FLOPs of the three expert projections over every (token, slot) pair.
double moe_flops(const Shape& s, std::size_t tokens);

}  // namespace moe::bench
