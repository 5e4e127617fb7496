#pragma once
// FP8 E4M3 codes to floats for the f32 decode kernels (compressed_kernels.cpp): the exact values
// with their NaN, and the values over 256 without it, which take half the vector operations.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "compressed_values.hpp"

namespace moe::backends::cpu {

// The 7 magnitude bits of an E4M3 code placed in an IEEE half (exponent bits 10-13, mantissa 7-9)
// make the code's value times 2^-8, subnormals included: the code sign-extended to a word,
// shifted left by 7 (the sign lands in bits 15 and 14, the magnitude in 7-13), bit 14 cleared.
MOE_AVX512 __attribute__((always_inline)) inline __m512 e4m3_16_over_256(const unsigned char* p) {
    const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_cvtph_ps(_mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16(static_cast<short>(0xbfff))));
}

// 16 codes to their values: the above times 256, and S.1111.111 the NaN.
MOE_AVX512 __attribute__((always_inline)) inline __m512 e4m3_16(const unsigned char* p) {
    const __m512 v = _mm512_mul_ps(e4m3_16_over_256(p), _mm512_set1_ps(256.0f));
    const __mmask16 nan = _mm_cmpeq_epi8_mask(
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(0x7f)), _mm_set1_epi8(0x7f));
    return _mm512_mask_blend_ps(nan, v, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
}

// Whether any of a row's K codes is a NaN (magnitude bits all set): 64 codes an operation pair.
MOE_AVX512 inline bool e4m3_row_has_nan(const unsigned char* row, std::size_t K) {
    __m512i most = _mm512_setzero_si512();
    const __m512i magnitude = _mm512_set1_epi8(0x7f);
    std::size_t k = 0;
    for (; k + 64 <= K; k += 64) most = _mm512_max_epu8(most, _mm512_and_si512(_mm512_loadu_si512(row + k), magnitude));
    const auto tail = static_cast<__mmask64>((1ull << (K - k)) - 1u);  // K - k < 64
    most = _mm512_max_epu8(most, _mm512_and_si512(_mm512_maskz_loadu_epi8(tail, row + k), magnitude));
    return _mm512_cmpeq_epi8_mask(most, magnitude) != 0;
}

// Whether the kernels may sum codes over 256 times A's rows and scale each group's sum by 256: the
// same roundings as the codes' own values wherever no term is subnormal, which holds when every
// nonzero |x| is at least 2^-100 (a product is then a multiple of 2^-140 and at least that: a
// subnormal partial sum is exact). Infinite and NaN x propagate as before.
inline bool e4m3_over_256_rows_ok(const float* A, std::size_t M, std::size_t lda, std::size_t K) {
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            std::uint32_t b;
            std::memcpy(&b, A + m * lda + k, 4);
            if (tiny_nonzero(b)) return false;
        }
    return true;
}

}  // namespace moe::backends::cpu
