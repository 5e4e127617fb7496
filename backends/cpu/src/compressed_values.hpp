#pragma once
// What the f32 decode kernels (compressed_kernels.cpp) and the bf16 dot kernels
// (compressed_dot_kernels.cpp) share: the values of stored codes, and a row's scales or zero points
// converted to floats.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "weight_view.hpp"

// The AVX-512 subset every compressed decode kernel needs (cpu_has_avx512() checks it).
#define MOE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))

namespace moe::backends::cpu {

constexpr bool is_nibble(DType t) { return t == DType::u4 || t == DType::i4 || t == DType::f4e2m1; }

// The value of every code of a weight type (4-bit types: indexed by the nibble), from the spec's
// decoders: built once per type.
const std::array<double, 256>& code_values(DType t);

// Whether x, an activation's f32 bits, is nonzero and below 2^-100 in magnitude: the kernels that
// sum in another scale or flush subnormals (the bf16 dot kernels, E4M3 over 256) are exact or the
// f32 chain only above it (dot_chunk_decode.hpp, e4m3_decode.hpp).
inline bool tiny_nonzero(std::uint32_t x) {
    constexpr std::uint32_t kMinMagnitude = 27u << 23;  // 2^-100: biased exponent 127 - 100
    const std::uint32_t mag = x & 0x7fffffffu;
    return mag != 0 && mag < kMinMagnitude;
}

// E8M0 codes, one in each 32-bit lane, as the f32 scales 2^(code - 127): the code is the exponent
// field, but for 0 (2^-127, an f32 subnormal) and 255 (NaN), set apart.
MOE_AVX512 inline __m512 e8m0_as_f32(__m512i codes) {
    const __m512 v = _mm512_castsi512_ps(_mm512_slli_epi32(codes, 23));
    const __m512 low = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(codes, _mm512_setzero_si512()), v,
                                            _mm512_set1_ps(0x1p-127f));
    return _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(codes, _mm512_set1_epi32(255)), low,
                                _mm512_set1_ps(__builtin_nanf("")));
}

// count scales or zero points of t from flat index base, as floats.
MOE_AVX512 void params_avx512(const Tensor& t, std::size_t base, std::size_t count, float* out);

}  // namespace moe::backends::cpu
