// The bf16 dot-product decode kernels for 4-bit weights on bf16 activations
// (compressed_dot_kernels.hpp): the arithmetic, and why its result is an f32 chain's, below.
#include "compressed_dot_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "compressed_kernels.hpp"
#include "compressed_values.hpp"
#include "cpu_features.hpp"

namespace moe::backends::cpu {

// ---- bf16 dot-product kernels (AVX512_BF16) for 4-bit weights on bf16 activations -------------
//
// Decode on bf16 data: the activations are bf16 values (the inputs, or the activation the pipeline
// rounds to bf16), held as f32. For 4-bit weights each 64-byte load holds 128 weights as 32 words
// of 4 nibbles; nibble j of every word is looked up (vpermw, the low 5 bits of each word index a
// 32-entry table of bf16 values) and vdpbf16ps multiplies 32 of them by 32 bf16 activations and adds
// the products in pairs to 16 f32 lanes: 4 lookups and 4 dot products per 128 weights, where the
// f32 kernels (compressed_kernels.cpp) take 8 permutes and 8 multiply-adds. Lane i of a chunk holds the products of
// elements 8i..8i+7, all in one group (groups are multiples of 32), and is scaled once by that
// group's scale (a vector of the chunk's four 32-element blocks' scales).
//
// Why the result is an f32 multiply-add chain's (the bound the backend declares). vdpbf16ps forms
// each bf16 * bf16 product exactly in f32 (8 + 8 significant bits) and adds the odd then the even
// product to the lane, each addition rounded to nearest even (the instruction's definition; checked
// bit for bit on Zen 5), but flushes subnormal inputs and outputs to zero (DAZ, FTZ). The path is
// taken only when every nonzero |x| of every row of A is at least 2^-100 and bf16 exactly (checked
// once per call, bf16_dot_rows_ok): such an x is a multiple of 2^-107, every table value (q - z, an
// integer, or an E2M1 value) a multiple of 2^-1, so every product is a multiple of 2^-108 and so is
// every rounded partial sum (rounding a multiple of 2^-108 that needs more than 24 bits lands on a
// coarser grid), and a nonzero one is at least 2^-108 in magnitude: nothing is ever subnormal, the
// flushes never act, and each lane is an f32 chain of exact products added in another order.
// Overflow, infinities and NaN behave as in that chain. The scale is applied by an ordinary FMA
// (E8M0 scales may be subnormal). Zero points are subtracted from the codes as integers (q - z in
// [-15, 15] indexes a table of the 31 differences): never as s * (sum q x - z sum x), whose
// cancellation the bound does not cover.
#define MOE_BF16DOT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512bf16,f16c,fma")))

// Each chunk's load is preceded by a prefetch of the line this far ahead (into the next rows past
// a row's end): one thread's stream from DRAM, left to the hardware prefetchers, runs at about
// 15 GB/s; 8 KB ahead measured best of 1-24 KB (L1 and L2 hints).
constexpr std::size_t kDotPrefetch = 8192;

inline std::uint32_t f32_bits(float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}

// Whether the rows of A can go through the bf16 dot kernels: every element bf16 exactly (the low
// 16 bits clear) and every nonzero one at least 2^-100 in magnitude (see above).
bool bf16_dot_rows_ok(const float* A, std::size_t M, std::size_t lda, std::size_t K) {
    constexpr std::uint32_t kMinMagnitude = 27u << 23;  // 2^-100: biased exponent 127 - 100
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const std::uint32_t b = f32_bits(A[m * lda + k]), mag = b & 0x7fffffffu;
            if ((b & 0xffffu) != 0 || (mag != 0 && mag < kMinMagnitude)) return false;
        }
    return true;
}

// A's rows as bf16 in the order the kernels take them: per 128-element chunk c, four vectors of 32
// words, vector j's word w = x[128c + 4w + j] (nibble j of the weight row's word w); the last
// chunk padded with zeros. Exact: the values are bf16 (bf16_dot_rows_ok).
void arrange_bf16(const float* A, std::size_t M, std::size_t lda, std::size_t K, std::uint16_t* X) {
    const std::size_t chunks = (K + kDotChunk - 1) / kDotChunk;
    std::fill(X, X + M * chunks * kDotChunk, std::uint16_t{0});
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const std::size_t c = k / kDotChunk, r = k % kDotChunk;
            X[(m * chunks + c) * kDotChunk + (r % 4) * 32 + r / 4] =
                static_cast<std::uint16_t>(f32_bits(A[m * lda + k]) >> 16);
        }
}

// The 32-entry bf16 table vpermw indexes with the low 5 bits of each word. Without zero points:
// the 16 code values, twice (bit 4, the next nibble's low bit, is ignored). With them: the index
// is q - z (mod 32), q - z in [-15, 15] (u4; i4 biased by 8 on both sides).
template <DType T, bool ZP>
MOE_BF16DOT inline __m512i dot_table() {
    alignas(64) std::uint16_t t[32];
    const auto& values = code_values(T);
    for (unsigned i = 0; i < 32; ++i) {
        const double v = ZP ? (i < 16 ? double(i) : double(i) - 32.0) : values[i & 15u];
        t[i] = static_cast<std::uint16_t>(f32_bits(static_cast<float>(v)) >> 16);  // exact in bf16
    }
    __m512i r;
    std::memcpy(&r, t, 64);
    return r;
}

template <DType T, int M, bool ZP>
MOE_BF16DOT void dot_rows_of(const std::uint16_t* X, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                             std::size_t n1) {
    const std::size_t G = W.groups, gs = W.group_size, per_group = gs / 32;
    const std::size_t chunks = (W.K + kDotChunk - 1) / kDotChunk, full = W.K / kDotChunk;
    // Per 32-element block: its group's scale (and zero point), zero past K.
    static thread_local std::vector<float> s, z, sb;
    static thread_local std::vector<std::int16_t> zb;
    s.resize(G);
    z.resize(G);
    // Every row's block scales (and zero points) first: read back right after they are stored,
    // the loads would wait on the stores (a vector load does not forward from narrower stores).
    const std::size_t stride = chunks * 4;
    // Zero points in the weight's 4-bit type with groups of 32 (and each row's first at an even
    // index): a chunk's four are two stored bytes, read in the chunk loop; else a table per row.
    // Groups of a multiple of 128: one zero point per chunk, a nibble.
    const bool direct_z = ZP && W.zero->dtype() == T && ((gs == 32 && G % 2 == 0) || gs % kDotChunk == 0);
    sb.assign((n1 - n0) * stride, 0.0f);
    zb.assign(ZP ? (n1 - n0) * stride : 0, 0);
    for (std::size_t n = n0; n < n1; ++n) {
        float* sr = sb.data() + (n - n0) * stride;
        if (gs == 32) {
            params_avx512(*W.scale, W.param(n, 0), G, sr);
        } else {
            params_avx512(*W.scale, W.param(n, 0), G, s.data());
            for (std::size_t g = 0, b = 0; g < G; ++g)
                for (std::size_t r = 0; r < per_group; ++r) sr[b++] = s[g];
        }
        if constexpr (ZP) {
            if (direct_z) continue;
            params_avx512(*W.zero, W.param(n, 0), G, z.data());
            std::int16_t* zr = zb.data() + (n - n0) * stride;
            for (std::size_t g = 0, b = 0; g < G; ++g)
                for (std::size_t r = 0; r < per_group; ++r)
                    zr[b++] = static_cast<std::int16_t>(static_cast<int>(z[g]) + (T == DType::i4 ? 8 : 0));
        }
    }
    const __mmask32 tail = static_cast<__mmask32>((1ull << (W.K % kDotChunk / 4)) - 1u);
    const __m512i table = dot_table<T, ZP>();
    const __m512i lane_block = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i low_nibbles = _mm512_set1_epi16(0x0f0f);
    // vpmultishiftqb: every byte of qwords 2b, 2b + 1 (words 8b..8b+7) from bit 4b (nibble b of a
    // word; the next nibble above it is masked off)
    const __m512i nibble_select = _mm512_set_epi64(0x0c0c0c0c0c0c0c0cll, 0x0c0c0c0c0c0c0c0cll, 0x0808080808080808ll,
                                                   0x0808080808080808ll, 0x0404040404040404ll, 0x0404040404040404ll, 0, 0);
    // vpermb: every byte of words 8b..8b+7 from the low byte of word b
    const __m512i byte_block = _mm512_set_epi64(0x0606060606060606ll, 0x0606060606060606ll, 0x0404040404040404ll,
                                                0x0404040404040404ll, 0x0202020202020202ll, 0x0202020202020202ll, 0, 0);
    for (std::size_t n = n0; n < n1; ++n) {
        const float* sr = sb.data() + (n - n0) * stride;
        const std::int16_t* zr = ZP && !direct_z ? zb.data() + (n - n0) * stride : nullptr;
        const std::size_t zbase = ZP ? W.param(n, 0) : 0;
        const unsigned char* zrow = direct_z ? W.zero->data() + zbase / 2 : nullptr;
        const unsigned char* row = W.data + n * W.row_bytes();
        // Chunk c's weights (the last one, if partial, loaded under a mask: zero codes, against
        // zero activations) as four vectors of bf16 values, and its lanes' scales.
        const auto values = [&](std::size_t c, __m512i (&v)[4], __m512& sv) MOE_BF16DOT {
            __m512i w = c < full ? _mm512_loadu_si512(row + 64 * c) : _mm512_maskz_loadu_epi16(tail, row + 64 * c);
            if constexpr (ZP) {
                if constexpr (T == DType::i4) w = _mm512_xor_si512(w, _mm512_set1_epi16(static_cast<short>(0x8888)));
                __m512i zv;  // the zero point of every byte's group, in each byte
                if (direct_z && gs != 32) {  // the chunk's group's nibble
                    const std::size_t flat = zbase + c * kDotChunk / gs;
                    unsigned one = (W.zero->data()[flat / 2] >> (flat % 2 * 4)) & 0x0fu;
                    if constexpr (T == DType::i4) one ^= 0x8u;
                    zv = _mm512_set1_epi8(static_cast<char>(one));
                } else if (direct_z) {  // nibble b of the two bytes to words 8b..8b+7 (i4: biased by 8)
                    const unsigned char* zp = zrow + 2 * c;
                    unsigned two = zp[0];
                    if (c < full || W.K % kDotChunk > 64) two |= static_cast<unsigned>(zp[1]) << 8;
                    if constexpr (T == DType::i4) two ^= 0x8888u;
                    const __m512i twos = _mm512_set1_epi16(static_cast<short>(two));
                    zv = _mm512_and_si512(_mm512_multishift_epi64_epi8(nibble_select, twos), low_nibbles);
                } else {
                    std::int64_t z4;
                    std::memcpy(&z4, zr + 4 * c, 8);
                    zv = _mm512_permutexvar_epi8(byte_block, _mm512_set1_epi64(z4));
                }
                // q - z per byte, mod 256 (the table reads the low 5 bits of each word's low byte)
                const __m512i even = _mm512_sub_epi8(_mm512_and_si512(w, low_nibbles), zv);  // nibbles 0 and 2
                const __m512i odd = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(w, 4), low_nibbles), zv);
                v[0] = _mm512_permutexvar_epi16(even, table);
                v[1] = _mm512_permutexvar_epi16(odd, table);
                v[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(even, 8), table);
                v[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(odd, 8), table);
            } else {
                v[0] = _mm512_permutexvar_epi16(w, table);
                v[1] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 4), table);
                v[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 8), table);
                v[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 12), table);
            }
            sv = _mm512_permutexvar_ps(lane_block, _mm512_castps128_ps512(_mm_loadu_ps(sr + 4 * c)));
        };
        // U chunks at a time, their four-product chains interleaved (one chain alone waits on
        // vdpbf16ps's latency); chunk u of a step goes to accumulator u % 2.
        __m512 acc[M][2];
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = _mm512_setzero_ps();
        const auto step = [&](std::size_t c0, auto units) MOE_BF16DOT {
            constexpr int U = decltype(units)::value;
            __m512i v[U][4];
            __m512 sv[U];
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                _mm_prefetch(reinterpret_cast<const char*>(row + 64 * (c0 + u) + kDotPrefetch), _MM_HINT_T0);
                values(c0 + u, v[u], sv[u]);
            }
#pragma GCC unroll 8
            for (int m = 0; m < M; ++m) {
                const std::uint16_t* x = X + (static_cast<std::size_t>(m) * chunks + c0) * kDotChunk;
                __m512 p[U];
#pragma GCC unroll 4
                for (int u = 0; u < U; ++u)
                    p[u] = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)v[u][0],
                                            (__m512bh)_mm512_loadu_si512(x + u * kDotChunk));
#pragma GCC unroll 4
                for (int j = 1; j < 4; ++j)
#pragma GCC unroll 4
                    for (int u = 0; u < U; ++u)
                        p[u] = _mm512_dpbf16_ps(p[u], (__m512bh)v[u][j],
                                                (__m512bh)_mm512_loadu_si512(x + u * kDotChunk + 32 * j));
#pragma GCC unroll 4
                for (int u = 0; u < U; ++u) acc[m][u % 2] = _mm512_fmadd_ps(p[u], sv[u], acc[m][u % 2]);
            }
        };
        constexpr int kUnroll = M == 1 ? 4 : M <= 3 ? 2 : 1;
        std::size_t c = 0;
        for (; c + kUnroll <= chunks; c += kUnroll) step(c, std::integral_constant<int, kUnroll>{});
        for (; c < chunks; ++c) step(c, std::integral_constant<int, 1>{});
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m)
            C[static_cast<std::size_t>(m) * ldc + n] = _mm512_reduce_add_ps(_mm512_add_ps(acc[m][0], acc[m][1]));
    }
}

template <DType T, bool ZP>
void dot_dispatch_m(const std::uint16_t* X, std::size_t M, const WeightView& W, float* C, std::size_t ldc,
                    std::size_t n0, std::size_t n1) {
    switch (M) {
        case 1: return dot_rows_of<T, 1, ZP>(X, W, C, ldc, n0, n1);
        case 2: return dot_rows_of<T, 2, ZP>(X, W, C, ldc, n0, n1);
        case 3: return dot_rows_of<T, 3, ZP>(X, W, C, ldc, n0, n1);
        case 4: return dot_rows_of<T, 4, ZP>(X, W, C, ldc, n0, n1);
        case 5: return dot_rows_of<T, 5, ZP>(X, W, C, ldc, n0, n1);
        case 6: return dot_rows_of<T, 6, ZP>(X, W, C, ldc, n0, n1);
        case 7: return dot_rows_of<T, 7, ZP>(X, W, C, ldc, n0, n1);
        default: return dot_rows_of<T, 8, ZP>(X, W, C, ldc, n0, n1);
    }
}

void dot_rows(const std::uint16_t* X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
              std::size_t n1) {
    switch (W.dtype) {
        case DType::u4:
            return W.zero ? dot_dispatch_m<DType::u4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<DType::u4, false>(X, M, W, C, ldc, n0, n1);
        case DType::i4:
            return W.zero ? dot_dispatch_m<DType::i4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<DType::i4, false>(X, M, W, C, ldc, n0, n1);
        default: return dot_dispatch_m<DType::f4e2m1, false>(X, M, W, C, ldc, n0, n1);
    }
}

bool compressed_uses_bf16_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W) {
    return M <= kCompressedRows && compressed_uses_decode_kernels(W) && cpu_has_avx512_bf16() && is_nibble(W.dtype) &&
           bf16_dot_rows_ok(A, M, lda, W.K);
}

}  // namespace moe::backends::cpu
