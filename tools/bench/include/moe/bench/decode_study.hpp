#pragma once
// moe-bench --decode-study: the cpu backend's decode GEMM on its own, one row of activations
// against one expert's first-GEMM weights, per weight type: how fast its kernels read the stored
// bytes with the weights in cache and streaming from memory, against the machine's read bandwidth
// and against bf16 weights. moe-bench's rows time the whole layer; this separates the kernels
// from the rest of the pipeline, and compute from memory.
#include <string>
#include <vector>

#include "moe/bench/shapes.hpp"

namespace moe::bench {

// `weights`: compressed presets (compressed_presets()); bf16 and f32 weights are always timed.
void decode_study(const Shape& s, const std::vector<std::string>& weights, int threads);

}  // namespace moe::bench
