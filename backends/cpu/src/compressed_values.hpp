#pragma once
// What the f32 decode kernels (compressed_kernels.cpp) and the bf16 dot kernels
// (compressed_dot_kernels.cpp) share: the values of stored codes, and a row's scales or zero points
// converted to floats.
#include <array>
#include <cstddef>

#include "weight_view.hpp"

// The AVX-512 subset every compressed decode kernel needs (cpu_has_avx512() checks it).
#define MOE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))

namespace moe::backends::cpu {

constexpr bool is_nibble(DType t) { return t == DType::u4 || t == DType::i4 || t == DType::f4e2m1; }

// The value of every code of a weight type (4-bit types: indexed by the nibble), from the spec's
// decoders: built once per type.
const std::array<double, 256>& code_values(DType t);

// count scales or zero points of t from flat index base, as floats.
MOE_AVX512 void params_avx512(const Tensor& t, std::size_t base, std::size_t count, float* out);

}  // namespace moe::backends::cpu
