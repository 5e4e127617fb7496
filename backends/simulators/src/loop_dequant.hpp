#pragma once
// The loop backends' own reading of compressed weights (spec/compressed.md), written from the
// spec's text and value tables independently of spec/src/compression.cpp and minifloat.cpp, so
// that the two check each other; and the dequantisation bugs of the loop mutants.
#include <cstddef>
#include <string>

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
    e5m2_inf,          // the E5M2 infinity codes read as +-57344
    e5m2_nan,          // the E5M2 NaN codes read as +-infinity
    e8m0_zero,         // the E8M0 scale code 0 read as 0, not 2^-127
    e4m3_negative_nan, // E4M3: 0xFF read as -480, only 0x7F taken for NaN
    u4_zero_point_signed,  // u4 zero points decoded as i4
    row_scale_per_tensor,  // a scale (and zero point) of one row [E, 1, G] read at group 0 for every group
    u4_scales_as_f16,      // u4 weights: the scale's bytes read as f16 elements, whatever its type
    weight_0_group_size,   // g = k / GS with weight_0's GS for every weight (kept below G: no read past the scale)
};

// Expert `e` of the compressed weight `weight` ([E, N, K]) as N x K floats into `out`, each
// W_f = (W - Z) * S computed exactly and rounded once to `dequant` (f32, f16 or bf16). One expert
// at a time: a run dequantises only the experts its routing uses (a model-sized case has 128).
void loop_dequantize_expert(const Problem& p, const std::string& weight, std::size_t e, DType dequant, DequantBug bug,
                            float* out);

}  // namespace moe::backends
