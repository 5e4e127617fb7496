// The bf16 dot kernels' block tables of scales and zero points (dot_param_tables.hpp).
#include "dot_param_tables.hpp"

#include <immintrin.h>

#include <cstdint>

#include "lane_masks.hpp"

namespace moe::backends::cpu {

#define MOE_TABLES_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

// count bytes of nibble pairs (low nibble first) as 2 * count bytes, each nibble plus bias (mod 16:
// i4's two's complement codes become z + 8).
MOE_TABLES_AVX512 void expand_nibbles(const unsigned char* src, std::size_t count, unsigned char bias, unsigned char* out) {
    const __m512i low = _mm512_set1_epi16(0x000f), high = _mm512_set1_epi16(0x0f00),
                  flip = _mm512_set1_epi8(static_cast<char>(bias));
    for (std::size_t i = 0; i < count; i += 32) {
        const __mmask32 m = first_lanes<__mmask32>(count - i);
        const __m512i b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, src + i));  // a byte a word
        const __m512i words = _mm512_or_si512(_mm512_and_si512(b, low), _mm512_and_si512(_mm512_slli_epi16(b, 4), high));
        _mm512_mask_storeu_epi16(out + 2 * i, m, _mm512_xor_si512(words, flip));
    }
}

// Each of count values repeated p times, out[i] = in[i / p] (p blocks of 32 per group): a permute
// per 16 outputs where p divides 16 (in is read 16 values at a time: padded by 16), a broadcast
// where 16 divides p, else one at a time.
MOE_TABLES_AVX512 void repeat_floats(const float* in, std::size_t count, std::size_t p, float* out) {
    const std::size_t total = count * p;
    if (16 % p == 0) {
        alignas(64) std::int32_t lanes[16];
        for (int i = 0; i < 16; ++i) lanes[i] = static_cast<std::int32_t>(static_cast<std::size_t>(i) / p);
        const __m512i idx = _mm512_load_si512(lanes);
        for (std::size_t o = 0; o < total; o += 16) {
            const __mmask16 m = first_lanes<__mmask16>(total - o);
            _mm512_mask_storeu_ps(out + o, m, _mm512_permutexvar_ps(idx, _mm512_loadu_ps(in + o / p)));
        }
    } else if (p % 16 == 0) {
        for (std::size_t g = 0; g < count; ++g)
            for (std::size_t o = 0; o < p; o += 16) _mm512_storeu_ps(out + g * p + o, _mm512_set1_ps(in[g]));
    } else {
        for (std::size_t i = 0; i < total; ++i) out[i] = in[i / p];
    }
}

// The same for bytes: a vpermb per 64 outputs where p divides 64 (in padded by 64).
MOE_TABLES_AVX512 void repeat_bytes(const unsigned char* in, std::size_t count, std::size_t p, unsigned char* out) {
    const std::size_t total = count * p;
    if (64 % p == 0) {
        alignas(64) unsigned char lanes[64];
        for (unsigned i = 0; i < 64; ++i) lanes[i] = static_cast<unsigned char>(i / p);
        const __m512i idx = _mm512_load_si512(lanes);
        for (std::size_t o = 0; o < total; o += 64) {
            const __mmask64 m = first_lanes<__mmask64>(total - o);
            _mm512_mask_storeu_epi8(out + o, m, _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(in + o / p)));
        }
    } else {
        for (std::size_t i = 0; i < total; ++i) out[i] = in[i / p];
    }
}

// count zero points (integers in the weight type's range, as floats) as bytes plus bias.
MOE_TABLES_AVX512 void bytes_from_floats(const float* in, std::size_t count, unsigned char bias, unsigned char* out) {
    const __m512i b = _mm512_set1_epi32(bias);
    for (std::size_t i = 0; i < count; i += 16) {
        const __mmask16 m = first_lanes<__mmask16>(count - i);
        const __m512i v = _mm512_add_epi32(_mm512_cvttps_epi32(_mm512_maskz_loadu_ps(m, in + i)), b);
        _mm_mask_storeu_epi8(out + i, m, _mm512_cvtepi32_epi8(v));
    }
}

}  // namespace moe::backends::cpu
