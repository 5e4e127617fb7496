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

// Compressed weights moe-bench times (--weights), as deployed checkpoints store them: u4 and i4
// with f16 scales per group of 128 (32 where 128 does not divide H or I: GPT-OSS's 2880, as
// OpenVINO's moe_gemm tests of that shape; u4 with u4 zero points), u8 and i8 per channel (u8
// with a zero point), mxfp4 (E2M1 in blocks of 32, E8M0 scales), f8e4m3 and f8e5m2 per channel
// with f32 scales.
const std::vector<std::string>& compressed_presets();
// The preset `name` for shape s; throws InputError naming the known ones otherwise.
generator::CompressionSpec compression_preset(const std::string& name, const Shape& s);
// "u4/g128", "mxfp4", "f8e4m3": what a row's weights are.
std::string compression_label(const std::string& name, const Shape& s);

// The case moe-bench synthesises: uniform inputs, fixed seed; routing uniform, skewed (Zipf 1.2)
// or hot (expert 0 in every token); weights in the data type, or compressed as `weights` (a
// preset name; "" for none).
generator::CaseSpec spec_for(const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                             const std::string& weights = "");

// The bytes of weights and biases (and compressed weights' scales and zero points) of the experts
// the problem's routing uses.
double weight_bytes_touched(const Problem& p);

// The FLOPs of the three expert projections over every (token, slot) pair.
double moe_flops(const Shape& s, std::size_t tokens);

}  // namespace moe::bench
