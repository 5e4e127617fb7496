#pragma once
// Rows of a tensor to and from f32 in the pipeline's hot loops (gather, output). The same values
// as Tensor::to_f64 / set_range give (widening is exact; narrowing rounds to nearest even), without
// the trip through f64 that the portable spec code takes.
#include <cstddef>
#include <cstdint>

#include "moe/spec/tensor.hpp"

namespace moe::backends::cpu {

// out[i] = t[begin + i] as f32, for i < count (f32, f16, bf16; f64 rounded to nearest).
void widen_to_f32(const Tensor& t, std::size_t begin, std::size_t count, float* out);

// t[begin + i] = in[i] rounded to t's type, for i < count.
void narrow_from_f32(const float* in, std::size_t count, Tensor& t, std::size_t begin);

// One f32 to bf16 bits, round to nearest even; NaN stays NaN.
std::uint16_t f32_to_bf16_bits(float v);

}  // namespace moe::backends::cpu
