// A's rows as integers on a per-block grid for the int8 dot kernels (int_dot_activations.hpp).
#include "int_dot_activations.hpp"

#include <immintrin.h>

#include <cmath>

// AVX-512 F, BW and VL: the int8 kernels' CPUs all have them (cpu_features.hpp).
#define MOE_AVX512_INT __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace moe::backends::cpu {

namespace {

constexpr std::size_t kChunk = 128, kBlock = 32;

// An element's X on its block's grid, 16 lanes at a time from the f32 bits: the significand
// (with its implicit bit; subnormals take exponent 1 without it) shifted right by the distance of
// its exponent below the block's largest, plus 2 (the grid is 2^(E - 22) for 24-bit
// significands), signed. `exact` clears the lanes whose shifted-out bits were not zero.
MOE_AVX512_INT inline __m512i grid_integers(__m512i bits, __m512i top_exponent_plus_2, __mmask16& exact) {
    const __m512i e = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xff));
    const __m512i frac = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffff));
    const __mmask16 normal = _mm512_cmpneq_epi32_mask(e, _mm512_setzero_si512());
    const __m512i significand = _mm512_mask_or_epi32(frac, normal, frac, _mm512_set1_epi32(0x800000));
    const __m512i shift = _mm512_sub_epi32(top_exponent_plus_2, _mm512_max_epi32(e, _mm512_set1_epi32(1)));
    const __m512i X = _mm512_srlv_epi32(significand, shift);  // counts of 32 and more give 0
    exact &= _mm512_cmpeq_epi32_mask(_mm512_sllv_epi32(X, shift), significand);
    const __mmask16 negative = _mm512_cmplt_epi32_mask(bits, _mm512_setzero_si512());
    return _mm512_mask_sub_epi32(X, negative, _mm512_setzero_si512(), X);
}

MOE_AVX512_INT inline __m512i low_byte(__m512i v) { return _mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24); }

// X's three signed digits (X = d0 + 256 d1 + 65536 d2: d0, d1 in [-128, 127], |d2| <= 64 for
// |X| < 2^22), 16 bytes each, into digits[0..2][half] + at.
MOE_AVX512_INT inline void store_digits(__m512i X, std::int8_t (&digits)[3][2][64], std::size_t half, std::size_t at) {
    const __m512i d0 = low_byte(X);
    const __m512i X1 = _mm512_srai_epi32(_mm512_sub_epi32(X, d0), 8);
    const __m512i d1 = low_byte(X1);
    const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(X1, d1), 8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(digits[0][half] + at), _mm512_cvtepi32_epi8(d0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(digits[1][half] + at), _mm512_cvtepi32_epi8(d1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(digits[2][half] + at), _mm512_cvtepi32_epi8(d2));
}

}  // namespace

MOE_AVX512_INT bool arrange_int(const float* A, std::size_t M, std::size_t lda, std::size_t K, double code_scale,
                                IntActivations& out) {
    const std::size_t chunks = (K + kChunk - 1) / kChunk, blocks = K / kBlock;
    out.chunks = chunks;
    out.rows.assign(M * chunks, IntChunk{});
    out.lane_units.assign(chunks * 16, 0.0f);
    out.block_units.assign(chunks * 4 + 16, 0.0f);
    const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), exponent = _mm512_set1_epi32(0x7f800000);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (std::size_t b = 0; b < blocks; ++b) {
        // The block's largest magnitude over the M rows (as bits: ordered as the values); any
        // infinity or NaN sends the call to other kernels.
        __m512i largest = _mm512_setzero_si512();
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t h = 0; h < 2; ++h) {
                const __m512i bits = _mm512_loadu_si512(A + m * lda + b * kBlock + 16 * h);
                if (_mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, exponent), exponent)) return false;
                largest = _mm512_max_epu32(largest, _mm512_and_si512(bits, magnitude));
            }
        const std::uint32_t top = _mm512_reduce_max_epu32(largest), top_exponent = top >> 23;
        // largest in [2^(E-1), 2^E), E = its biased exponent - 126. A subnormal largest puts the
        // unit below 2^-100.
        const int unit_exp = top == 0 ? 0 : static_cast<int>(top_exponent) - 126 - kIntDigitsBits;
        if (top != 0 && (top_exponent == 0 || unit_exp < kIntUnitMinExp || unit_exp > kIntUnitMaxExp)) return false;
        const std::size_t c = b * kBlock / kChunk, first = b * kBlock % kChunk;  // the block's chunk, its first element
        const float unit = static_cast<float>(std::ldexp(code_scale, unit_exp));
        out.block_units[b] = unit;
        for (std::size_t i = 0; i < 4; ++i) out.lane_units[b * 4 + i] = unit;  // lanes 16c + first / 8 + i
        if (top == 0) continue;  // zeros: the digits and bias stay zero
        const __m512i top_plus_2 = _mm512_set1_epi32(static_cast<int>(top_exponent) + 2);
        for (std::size_t m = 0; m < M; ++m) {
            IntChunk& ch = out.rows[m * chunks + c];
            const float* a = A + m * lda + b * kBlock;
            __mmask16 exact = 0xffff;
            const __m512i lo = _mm512_loadu_si512(a), hi = _mm512_loadu_si512(a + 16);
            // elements 2j and 2j + 1 of the block, as the low and high nibbles of byte j come
            const __m512i Xe = grid_integers(_mm512_permutex2var_epi32(lo, even, hi), top_plus_2, exact);
            const __m512i Xo = grid_integers(_mm512_permutex2var_epi32(lo, odd, hi), top_plus_2, exact);
            if (exact != 0xffff) return false;  // not on the block's grid
            store_digits(Xe, ch.digits, 0, first / 2);
            store_digits(Xo, ch.digits, 1, first / 2);
            alignas(64) std::int32_t pairs[16];  // pair j: elements 2j and 2j + 1
            _mm512_store_si512(pairs, _mm512_add_epi32(Xe, Xo));
            for (std::size_t i = 0; i < 4; ++i)
                ch.bias[first / 8 + i] = -16 * (pairs[4 * i] + pairs[4 * i + 1] + pairs[4 * i + 2] + pairs[4 * i + 3]);
        }
    }
    return true;
}

}  // namespace moe::backends::cpu
