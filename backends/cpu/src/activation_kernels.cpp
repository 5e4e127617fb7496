#include "activation_kernels.hpp"

#include "cpu_features.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace moe::backends::cpu {

namespace {

float swish(float x, float beta) { return x / (1.0f + std::exp(-beta * x)); }

#define MOE_AVX512 __attribute__((target("avx512f,fma")))

// exp(x), f32: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by Cephes' degree-6 minimax polynomial
// (relative error below 1 ulp), times 2^n by scalef, which also gives +inf above the f32 range,
// gradual underflow and 0 below it. NaN stays NaN: max/min return their second operand when
// either is NaN, and x is the second operand.
MOE_AVX512 inline __m512 exp16(__m512 x) {
    const __m512 clamped = _mm512_min_ps(_mm512_set1_ps(100.0f), _mm512_max_ps(_mm512_set1_ps(-110.0f), x));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(clamped, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), clamped);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(e, n);
}

MOE_AVX512 inline __m512 swish16(__m512 x, __m512 beta) {
    const __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), beta), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

MOE_AVX512 void swiglu_split_avx512(const float* gate, const float* up, float* act, std::size_t I, float beta) {
    const __m512 b = _mm512_set1_ps(beta);
    std::size_t j = 0;
    for (; j + 16 <= I; j += 16)
        _mm512_storeu_ps(act + j, _mm512_mul_ps(swish16(_mm512_loadu_ps(gate + j), b), _mm512_loadu_ps(up + j)));
    if (j < I) {
        const __mmask16 m = static_cast<__mmask16>((1u << (I - j)) - 1u);
        _mm512_mask_storeu_ps(act + j, m, _mm512_mul_ps(swish16(_mm512_maskz_loadu_ps(m, gate + j), b), _mm512_maskz_loadu_ps(m, up + j)));
    }
}

MOE_AVX512 void swiglu_interleaved_avx512(const float* first, float* act, std::size_t I, int gate_lane, float limit,
                                          float beta) {
    const __m512 b = _mm512_set1_ps(beta), L = _mm512_set1_ps(limit), minus_L = _mm512_set1_ps(-limit),
                 one = _mm512_set1_ps(1.0f);
    // Lane selectors: the even (0, 2, ..., 30) and odd (1, ..., 31) elements of two registers.
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i gate_sel = gate_lane ? odd : even, lin_sel = gate_lane ? even : odd;
    std::size_t j = 0;
    for (; j < I; j += 16) {
        const std::size_t count = std::min<std::size_t>(16, I - j);
        const __mmask16 m = static_cast<__mmask16>(count == 16 ? 0xFFFFu : (1u << count) - 1u);
        const __mmask16 lo = static_cast<__mmask16>(count >= 8 ? 0xFFFFu : (1u << (2 * count)) - 1u);
        const __mmask16 hi = static_cast<__mmask16>(count <= 8 ? 0u : count == 16 ? 0xFFFFu : (1u << (2 * (count - 8))) - 1u);
        const __m512 v0 = _mm512_maskz_loadu_ps(lo, first + 2 * j), v1 = _mm512_maskz_loadu_ps(hi, first + 2 * j + 16);
        const __m512 g = _mm512_permutex2var_ps(v0, gate_sel, v1), l = _mm512_permutex2var_ps(v0, lin_sel, v1);
        // vminps/vmaxps return the second operand when either is NaN: with x second, min(x, L)
        // and clamp(x, -L, L) keep a NaN x, as the spec's section 7 says they must.
        const __m512 gate = _mm512_min_ps(L, g);
        const __m512 lin = _mm512_max_ps(minus_L, _mm512_min_ps(L, l));
        _mm512_mask_storeu_ps(act + j, m, _mm512_mul_ps(_mm512_add_ps(lin, one), swish16(gate, b)));
    }
}

}  // namespace

void scalar_swiglu_interleaved_row(const float* first, float* act, std::size_t I, int gate_lane, float limit, float beta) {
    for (std::size_t j = 0; j < I; ++j) {
        const float gate = std::min(first[2 * j + static_cast<std::size_t>(gate_lane)], limit);
        // std::max(a, b) returns a unless a < b: the NaN first, so that it stays NaN.
        const float lin = std::max(std::min(first[2 * j + 1 - static_cast<std::size_t>(gate_lane)], limit), -limit);
        act[j] = (lin + 1.0f) * swish(gate, beta);
    }
}

void scalar_swiglu_split_row(const float* gate, const float* up, float* act, std::size_t I, float beta) {
    for (std::size_t j = 0; j < I; ++j) act[j] = swish(gate[j], beta) * up[j];
}

void swiglu_interleaved_row(const float* first, float* act, std::size_t I, int gate_lane, float limit, float beta) {
    if (cpu_has_avx512()) return swiglu_interleaved_avx512(first, act, I, gate_lane, limit, beta);
    scalar_swiglu_interleaved_row(first, act, I, gate_lane, limit, beta);
}

void swiglu_split_row(const float* gate, const float* up, float* act, std::size_t I, float beta) {
    if (cpu_has_avx512()) return swiglu_split_avx512(gate, up, act, I, beta);
    scalar_swiglu_split_row(gate, up, act, I, beta);
}

}  // namespace moe::backends::cpu
