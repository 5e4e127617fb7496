#pragma once
// The loop backends' own reading of compressed weights (spec/compressed.md), written from the
// spec's text and value tables independently of spec/src/compression.cpp and minifloat.cpp, so
// that the two check each other; and the dequantisation bugs of the loop mutants.
#include <string>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::backends {

enum class DequantBug {
    none,
    zero_point_sign,   // (W + Z) * S
    nibble_order,      // element 2i read from the high nibble, 2i + 1 from the low one
    next_group_scale,  // the scale (and zero point) of group (g + 1) mod G
    first_group_scale, // grouped scales read as per-channel: every group takes group 0's
    e8m0_bias,         // E8M0 scale 2^(code - 126) instead of 2^(code - 127)
    fp8_subnormals,    // FP8 codes with a zero exponent field read as zero
    e4m3_nan,          // the E4M3 NaN codes (S.1111.111) read as +-480, the pattern's next value
    odd_last_scale,    // G odd and > 1: the last group's scale read as 1 (scales read in pairs)
};

// The compressed weight `weight` ([E, N, K]) as floats, each W_f = (W - Z) * S computed exactly and
// rounded once to `dequant` (f32, f16 or bf16).
std::vector<float> loop_dequantize(const Problem& p, const std::string& weight, DType dequant, DequantBug bug);

}  // namespace moe::backends
