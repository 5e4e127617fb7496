// The dot-product decode kernels for 4-bit weights (compressed_dot_kernels.hpp), on bf16
// activations (vdpbf16ps) or on activations on a per-block grid (vpdpbusd): one loop, two product
// engines; the arithmetic of each, and why its result is within an f32 chain's bound, below.
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
#include "dot_param_tables.hpp"
#include "int_dot_activations.hpp"

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
// bit for bit on Zen 5 and on an Intel Xeon with AMX: 3.2 million lanes), but flushes subnormal
// inputs and outputs to zero (DAZ, FTZ). The path is
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

// ---- int8 dot-product kernels (AVX512_VNNI, GFNI) for 4-bit weights on activations on a grid ----
//
// Where every 32-element block of A's rows lies on one power-of-two grid (int_dot_activations.hpp:
// x = X * unit, |X| < 2^22, three signed digit bytes), the same loop takes vpdpbusd instead: each
// code byte carries its value v plus 16 (q - z + 16, or a table's v + 16 without zero points;
// MXFP4's codes as twice their E2M1 value), in [1, 31], so unsigned; a lane starts from -16 times
// the sum of its eight X and adds, per digit, the exact products of four code bytes and four
// digits. Lane i then holds sum (q - z) X over elements 8i..8i+7 exactly (|sum| <= 15 * 8 * 2^22 <
// 2^29: int32 arithmetic is modular, so the digits' partial sums may wrap on the way), which one
// conversion rounds to f32 (the only rounding before the scale), times the block's unit (a power of
// two: exact, the unit's range keeps it normal) and then scaled by the same FMA as above. Each lane
// is thus the exact sum of its eight products rounded once, within the bound of the f32 chain that
// the bf16 kernels are. Two vector operations a chunk decode each nibble half (an and or a GFNI
// shift, then the zero point's add or a value table), six vpdpbusd form the products (two a cycle,
// where vdpbf16ps issues one every two: docs/compressed.md), and four combine the digits. With
// f16 scales the units ride on the scales (an f16 scale times a unit in [2^-100, 2^100] is an exact
// normal f32); other scales (E8M0 may be subnormal) leave the units to multiply each lane's sum.
#define MOE_INTDOT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni,gfni,f16c,fma")))
// The loop both engines share is compiled for the instructions of both; each engine is only
// called where its own are present (cpu_features.hpp).
#define MOE_DOTLOOP \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512bf16,avx512vnni,gfni,f16c,fma")))

// Which products a dot kernel forms: bf16 values by vdpbf16ps, or code bytes by vpdpbusd.
enum class Products { bf16, int8 };

// Each chunk's load is preceded by two software prefetches (into the next rows past a row's end):
// the line 8 KB ahead into L2 and the line 2 KB ahead into L1. One thread's stream from DRAM, left
// to the hardware prefetchers, runs at about 15 GB/s; a single L1 prefetch 8 KB ahead holds no
// more lines in flight than L1 has miss buffers, and two threads then moved 19 GB/s of codes on
// a Zen 4 host whose read probe gave 34 GB/s; the far L2 prefetch and the near L1 one, 25 GB/s.
// 12 KB and 4 KB did as well in a standalone loop and worse in moe-bench (docs/compressed.md).
constexpr std::size_t kDotPrefetchL2 = 8192, kDotPrefetchL1 = 2048;

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

// Whether chunks have zero points: none, one byte per 32-element block in a table built per work
// item (block_bytes; i4: biased by 8), four bytes a chunk, or (groups of 32) the stored nibbles
// themselves, read in the kernel (packed_nibbles).
enum class ChunkZeros { none, block_bytes, packed_nibbles };

// The constants the chunk decoder uses, built once per call.
struct DotConstants {
    __m512i table, lane_block, low_nibbles, block_select, nibble_select[2];
    __m512i step_select[4], step_lanes[4];  // a four-chunk step's chunk u: its zero nibbles, its scale lanes
    // int8 products: 16 in every byte; the GF(2) matrix that shifts each byte right by 4 (its high
    // nibble down, zeros above); the 16-entry table of a code's value plus 16 (no zero points).
    __m512i sixteen, high_nibble_shift, value_table;
};

MOE_BF16DOT inline DotConstants dot_constants(__m512i table) {
    DotConstants k;
    k.table = table;
    k.lane_block = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    k.low_nibbles = _mm512_set1_epi16(0x0f0f);
    // vpmultishiftqb on a qword of four block bytes: every byte of qwords 2b, 2b + 1 (words 8b..8b+7,
    // the chunk's block b) from bit 8b, byte b
    k.block_select = _mm512_set_epi64(0x1818181818181818ll, 0x1818181818181818ll, 0x1010101010101010ll,
                                      0x1010101010101010ll, 0x0808080808080808ll, 0x0808080808080808ll, 0, 0);
    // The same from packed nibbles: block b's nibble from bit 4b (4b + 4 when the chunk's first
    // nibble is a byte's high one), its neighbour's bits above it cleared afterwards
    for (int odd = 0; odd < 2; ++odd) {
        const auto sel = [&](int b) { return static_cast<long long>(0x0101010101010101ull * unsigned(4 * (b + odd))); };
        k.nibble_select[odd] = _mm512_set_epi64(sel(3), sel(3), sel(2), sel(2), sel(1), sel(1), sel(0), sel(0));
    }
    for (int u = 0; u < 4; ++u) {
        const auto sel = [&](int b) { return static_cast<long long>(0x0101010101010101ull * unsigned(16 * u + 4 * b)); };
        k.step_select[u] = _mm512_set_epi64(sel(3), sel(3), sel(2), sel(2), sel(1), sel(1), sel(0), sel(0));
        k.step_lanes[u] = _mm512_add_epi32(k.lane_block, _mm512_set1_epi32(4 * u));
    }
    k.sixteen = _mm512_set1_epi8(16);
    // Result bit i is the parity of (matrix byte 7 - i) & x: bytes 7..4 pick bits 4..7 into bits 0..3.
    k.high_nibble_shift = _mm512_set1_epi64(0x1020408000000000ll);
    k.value_table = _mm512_setzero_si512();
    return k;
}

// The int8 kernels' table for vpshufb (16 entries, repeated in each 128-bit lane): code c's value
// plus 16, the value twice E2M1's for MXFP4 (integers in [-12, 12]) and the code's own otherwise.
template <DType T>
MOE_INTDOT inline __m512i int_value_table() {
    alignas(64) std::int8_t t[64];
    const auto& values = code_values(T);
    for (unsigned i = 0; i < 64; ++i)
        t[i] = static_cast<std::int8_t>((T == DType::f4e2m1 ? 2.0 : 1.0) * values[i & 15u] + 16.0);
    __m512i r;
    std::memcpy(&r, t, 64);
    return r;
}

// One chunk's 128 weights as four vectors of bf16 values (vector j: nibble j of every word). The
// codes w are loaded by the caller; zv is every byte's zero point (Z != none).
template <DType T, ChunkZeros Z>
MOE_BF16DOT inline void chunk_values(__m512i w, __m512i zv, const DotConstants& k, __m512i (&v)[4]) {
    if constexpr (Z != ChunkZeros::none) {
        if constexpr (T == DType::i4) w = _mm512_xor_si512(w, _mm512_set1_epi16(static_cast<short>(0x8888)));
        // q - z per byte, mod 256 (the table reads the low 5 bits of each word's low byte)
        const __m512i even = _mm512_sub_epi8(_mm512_and_si512(w, k.low_nibbles), zv);  // nibbles 0 and 2
        const __m512i odd = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(w, 4), k.low_nibbles), zv);
        v[0] = _mm512_permutexvar_epi16(even, k.table);
        v[1] = _mm512_permutexvar_epi16(odd, k.table);
        v[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(even, 8), k.table);
        v[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(odd, 8), k.table);
    } else {
        v[0] = _mm512_permutexvar_epi16(w, k.table);
        v[1] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 4), k.table);
        v[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 8), k.table);
        v[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 12), k.table);
    }
}

// One chunk's 128 weights as two vectors of code bytes for vpdpbusd, each code's value plus 16 (in
// [1, 31]): b[0] the low nibbles (elements 2j), b[1] the high ones (2j + 1). zv as above.
template <DType T, ChunkZeros Z>
MOE_INTDOT inline void chunk_bytes(__m512i w, __m512i zv, const DotConstants& k, __m512i (&b)[2]) {
    // i4 with zero points: codes and zero points both biased by 8 (their xor with 8), which cancels
    if constexpr (Z != ChunkZeros::none && T == DType::i4)
        w = _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x88)));
    const __m512i high = _mm512_gf2p8affine_epi64_epi8(w, k.high_nibble_shift, 0);
    if constexpr (Z != ChunkZeros::none) {
        const __m512i offset = _mm512_sub_epi8(k.sixteen, zv);  // q - z + 16
        b[0] = _mm512_add_epi8(_mm512_and_si512(w, k.low_nibbles), offset);
        b[1] = _mm512_add_epi8(high, offset);
    } else {
        b[0] = _mm512_shuffle_epi8(k.value_table, _mm512_and_si512(w, k.low_nibbles));
        b[1] = _mm512_shuffle_epi8(k.value_table, high);
    }
}

// Every byte's zero point for a chunk: block b's byte to words 8b..8b+7. One vpmultishiftqb on the
// table's eight bytes from the chunk's first block, broadcast by the load (the table is padded).
MOE_BF16DOT inline __m512i chunk_zeros(const unsigned char* blocks, const DotConstants& k) {
    std::int64_t z8;
    std::memcpy(&z8, blocks, 8);
    return _mm512_multishift_epi64_epi8(k.block_select, _mm512_set1_epi64(z8));
}

// The same from the stored nibbles (groups of 32): `blocks` of them from nibble `odd` of `p` on
// (u4 as stored; i4 biased by 8, as its codes are), reading only the bytes that hold them.
template <DType T>
MOE_BF16DOT inline __m512i chunk_zeros_packed(const unsigned char* p, unsigned odd, unsigned blocks,
                                              const DotConstants& k) {
    const __mmask16 bytes = static_cast<__mmask16>((1u << ((odd + blocks + 1) / 2)) - 1u);
    const __m512i q = _mm512_broadcastq_epi64(_mm_maskz_loadu_epi8(bytes, p));
    const __m512i z = _mm512_and_si512(_mm512_multishift_epi64_epi8(k.nibble_select[odd], q), k.low_nibbles);
    if constexpr (T == DType::i4) return _mm512_xor_si512(z, _mm512_set1_epi8(8));
    return z;
}

// Where R consecutive weight rows' bytes, block scales and zero points are; `wide`: groups span
// whole chunks (a chunk's four block scales are one). With groups of 32 and f16 scales the kernel
// reads them as stored (`half_scales`), and nibble zero points too (`packed_zeros`, from nibble
// `zero_odd` of the first byte): no per-item conversion pass, which cost about an eighth of a
// decode streaming from memory.
template <int R>
struct DotRows {
    const unsigned char* codes[R];
    const float* scales[R];
    const unsigned char* zeros[R];  // block_bytes
    const std::uint16_t* half_scales[R];
    const unsigned char* packed_zeros[R];
    unsigned zero_odd[R];
    bool wide;
};

// The activations each engine reads: the bf16 kernels' arranged words, the int8 kernels' digits.
template <Products P>
using DotInput = std::conditional_t<P == Products::bf16, const std::uint16_t*, const IntActivations*>;

// One chunk's lane sums in the int8 kernels: the code bytes b times the digit planes d (each an
// element's digits, 2j then 2j + 1), started from bias: three independent digit chains (one chain
// of six waits on vpdpbusd's latency), then combined. Exact: lane i is sum (q - z) X over elements
// 8i..8i+7, below 2^29 in magnitude (int32 wraps harmlessly on the way).
MOE_INTDOT inline __m512i digit_sum(const __m512i (&b)[2], const std::int8_t (&d)[3][2][64], const std::int32_t* bias) {
    const auto plane = [&](int i, int h) MOE_INTDOT { return _mm512_loadu_si512(d[i][h]); };
    __m512i a2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), b[0], plane(2, 0));
    __m512i a1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), b[0], plane(1, 0));
    __m512i a0 = _mm512_dpbusd_epi32(_mm512_loadu_si512(bias), b[0], plane(0, 0));
    a2 = _mm512_dpbusd_epi32(a2, b[1], plane(2, 1));
    a1 = _mm512_dpbusd_epi32(a1, b[1], plane(1, 1));
    a0 = _mm512_dpbusd_epi32(a0, b[1], plane(0, 1));
    return _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(a2, 16), _mm512_slli_epi32(a1, 8)), a0);
}

// R weight rows' dot products with M rows of X into sums. The full chunks run without a branch, U
// at a time for each of the R rows (their product chains interleaved: one chain alone waits on
// the product instruction's latency, and the R rows share each load of X; chunk u of a step goes to
// accumulator u % 2); the partial last chunk, if any, is loaded under a mask (zero codes, against
// zero activations).
template <Products P, DType T, int M, ChunkZeros Z, int R, bool HalfScales>
MOE_DOTLOOP inline void dot_row(DotInput<P> X, std::size_t chunks, std::size_t full, std::size_t tail_k,
                                const DotRows<R>& rows, const DotConstants& k, __m512 (&sums)[R][M][2]) {
    // The accumulators in registers for the whole row (the caller's array, in memory, put a store
    // and a reload into every multiply-add's chain).
    __m512 acc[R][M][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) acc[r][m][0] = acc[r][m][1] = _mm512_setzero_ps();
    constexpr bool kInt = P == Products::int8;
    constexpr bool kUnitsOnScales = kInt && HalfScales;  // int8 on f16 scales: see above
    const auto step = [&](std::size_t c0, auto units, auto is_tail) MOE_DOTLOOP __attribute__((always_inline)) {
        constexpr int U = decltype(units)::value;
        constexpr bool kTail = decltype(is_tail)::value;
        __m512i v[R][U][P == Products::bf16 ? 4 : 2];
        __m512 sv[R][U];
        // A whole step of four chunks (one row of A): its 16 block scales by one load (and one
        // conversion, f16 as stored) and its 16 stored zero-point nibbles by one 64-bit word, where
        // each chunk took a load, a conversion and a masked load of its own; the chunks' blocks all
        // lie inside the row, so every byte read is the row's own. The kernel is bound by its
        // arithmetic on the hosts measured: 3-9 % more codes a second (docs/compressed.md).
        constexpr bool kStep = U == 4 && !kTail;
        [[maybe_unused]] __m512 step_scales[R];
        [[maybe_unused]] __m512i step_zeros[R];
        if constexpr (kStep) {
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                if constexpr (HalfScales)
                    step_scales[r] = _mm512_cvtph_ps(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.half_scales[r] + 4 * c0)));
                else
                    step_scales[r] = rows.wide ? _mm512_setzero_ps() : _mm512_loadu_ps(rows.scales[r] + 4 * c0);
                if constexpr (kUnitsOnScales)
                    step_scales[r] = _mm512_mul_ps(step_scales[r], _mm512_loadu_ps(X->block_units.data() + 4 * c0));
                if constexpr (Z == ChunkZeros::packed_nibbles) {
                    const unsigned char* zp = rows.packed_zeros[r] + 2 * c0;
                    std::uint64_t z;
                    std::memcpy(&z, zp, 8);
                    if (rows.zero_odd[r]) z = (z >> 4) | (static_cast<std::uint64_t>(zp[8] & 0x0fu) << 60);
                    step_zeros[r] = _mm512_set1_epi64(static_cast<long long>(z));
                }
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                const std::size_t c = c0 + u;
                const unsigned char* row = rows.codes[r];
                __m512i w, zv = _mm512_setzero_si512();
                if constexpr (kTail) {
                    w = _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << (tail_k / 4)) - 1u), row + 64 * c);
                } else {
                    _mm_prefetch(reinterpret_cast<const char*>(row + 64 * c + kDotPrefetchL2), _MM_HINT_T2);
                    _mm_prefetch(reinterpret_cast<const char*>(row + 64 * c + kDotPrefetchL1), _MM_HINT_T0);
                    w = _mm512_loadu_si512(row + 64 * c);
                }
                // The partial chunk's blocks past K meet zero codes against zero activations.
                const unsigned blocks = kTail ? static_cast<unsigned>((tail_k + 31) / 32) : 4u;
                if constexpr (Z == ChunkZeros::block_bytes) zv = chunk_zeros(rows.zeros[r] + 4 * c, k);
                if constexpr (Z == ChunkZeros::packed_nibbles && kStep) {
                    zv = _mm512_and_si512(_mm512_multishift_epi64_epi8(k.step_select[u], step_zeros[r]), k.low_nibbles);
                    if constexpr (T == DType::i4) zv = _mm512_xor_si512(zv, _mm512_set1_epi8(8));
                } else if constexpr (Z == ChunkZeros::packed_nibbles)
                    zv = chunk_zeros_packed<T>(rows.packed_zeros[r] + (rows.zero_odd[r] + 4 * c) / 2, rows.zero_odd[r],
                                               blocks, k);
                if constexpr (kInt) chunk_bytes<T, Z>(w, zv, k, v[r][u]);
                else chunk_values<T, Z>(w, zv, k, v[r][u]);
                if (kStep && (HalfScales || !rows.wide)) {
                    sv[r][u] = _mm512_permutexvar_ps(k.step_lanes[u], step_scales[r]);
                } else if constexpr (HalfScales) {
                    // The chunk's (at most) four f16 scales, converted exactly; none past K.
                    const __m128i h = _mm_maskz_loadu_epi16(static_cast<__mmask8>((1u << blocks) - 1u),
                                                            rows.half_scales[r] + 4 * c);
                    sv[r][u] = _mm512_permutexvar_ps(k.lane_block, _mm512_castps128_ps512(_mm_cvtph_ps(h)));
                    if constexpr (kUnitsOnScales)
                        sv[r][u] = _mm512_mul_ps(sv[r][u], _mm512_loadu_ps(X->lane_units.data() + 16 * c));
                } else if (!kTail && rows.wide) {
                    sv[r][u] = _mm512_set1_ps(rows.scales[r][4 * c]);  // a load, no permute
                } else {
                    // The partial chunk's blocks past K have no scale (and meet zero codes): zero.
                    const __m128 s4 = kTail ? _mm_maskz_loadu_ps(static_cast<__mmask8>((1u << (tail_k / 32)) - 1u),
                                                                 rows.scales[r] + 4 * c)
                                            : _mm_loadu_ps(rows.scales[r] + 4 * c);
                    sv[r][u] = _mm512_permutexvar_ps(k.lane_block, _mm512_castps128_ps512(s4));
                }
            }
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                if constexpr (kInt) {
                    const IntChunk& x = X->rows[static_cast<std::size_t>(m) * chunks + c0 + u];
                    [[maybe_unused]] const __m512 lane_units =
                        kUnitsOnScales ? _mm512_setzero_ps() : _mm512_loadu_ps(X->lane_units.data() + 16 * (c0 + u));
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        __m512 p = _mm512_cvtepi32_ps(digit_sum(v[r][u], x.digits, x.bias));  // the one rounding
                        if constexpr (!kUnitsOnScales) p = _mm512_mul_ps(p, lane_units);  // exact
                        acc[r][m][u % 2] = _mm512_fmadd_ps(p, sv[r][u], acc[r][m][u % 2]);
                    }
                } else {
                    const std::uint16_t* x = X + (static_cast<std::size_t>(m) * chunks + c0) * kDotChunk;
                    __m512i xv[4];
#pragma GCC unroll 4
                    for (int j = 0; j < 4; ++j) xv[j] = _mm512_loadu_si512(x + u * kDotChunk + 32 * j);
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        __m512 p = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)v[r][u][0], (__m512bh)xv[0]);
#pragma GCC unroll 4
                        for (int j = 1; j < 4; ++j) p = _mm512_dpbf16_ps(p, (__m512bh)v[r][u][j], (__m512bh)xv[j]);
                        acc[r][m][u % 2] = _mm512_fmadd_ps(p, sv[r][u], acc[r][m][u % 2]);
                    }
                }
            }
        }
    };
    constexpr int kUnroll = R == 2 ? 2 : M == 1 ? 4 : M <= 3 ? 2 : 1;
    std::size_t c = 0;
    for (; c + kUnroll <= full; c += kUnroll)
        step(c, std::integral_constant<int, kUnroll>{}, std::false_type{});
    for (; c < full; ++c) step(c, std::integral_constant<int, 1>{}, std::false_type{});
    if (full < chunks) step(full, std::integral_constant<int, 1>{}, std::true_type{});
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) {
            sums[r][m][0] = acc[r][m][0];
            sums[r][m][1] = acc[r][m][1];
        }
}

template <Products P, DType T, int M, bool ZP>
MOE_DOTLOOP void dot_rows_of(DotInput<P> X, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                             std::size_t n1) {
    const std::size_t G = W.groups, gs = W.group_size, per_group = gs / 32;
    const std::size_t chunks = (W.K + kDotChunk - 1) / kDotChunk, full = W.K / kDotChunk;
    // Groups of 32 with f16 scales (and zero points, if any, as nibbles of the weight's type): the
    // kernel reads them as stored.
    const bool stored = per_group == 1 && W.scale->dtype() == DType::f16 && (!ZP || W.zero->dtype() == T);
    // The next rows' scales and zero points (the thread's next item: threads take contiguous
    // runs of items) requested now, so that converting them below does not wait on memory.
    const auto prefetch_params = [&](const Tensor& t) {
        const std::size_t first = storage_bytes(t.dtype(), W.param(n1, 0)),
                          last = std::min(t.nbytes(), storage_bytes(t.dtype(), W.param(n1, 0) + (n1 - n0) * G));
        for (std::size_t b = first; b < last; b += 64)
            _mm_prefetch(reinterpret_cast<const char*>(t.data() + b), _MM_HINT_T0);
    };
    if (n1 < W.N && W.scale_rows != 1 && !stored) {
        prefetch_params(*W.scale);
        if constexpr (ZP) prefetch_params(*W.zero);
    }
    // Per 32-element block of each row: its group's scale (and zero point), K / 32 a row, for
    // every row of the item at once (one row when every row shares it). Built before the rows
    // are read: read back right after they are stored, the loads would wait on the stores (a
    // vector load does not forward from narrower stores).
    static thread_local std::vector<float> s, sb;
    static thread_local std::vector<unsigned char> zg, zb;
    const std::size_t stride = W.K / 32, param_rows = W.scale_rows == 1 ? 1 : n1 - n0,
                      params = param_rows * G;
    const auto row_offset = [&](std::size_t n) { return W.scale_rows == 1 ? 0 : (n - n0) * stride; };
    // Groups of 32 (one block a group): converted straight into the block tables.
    const bool per_block = per_group == 1;
    if (!stored) {
        s.resize(params + 16);
        sb.resize(params * per_group);
        params_avx512(*W.scale, W.param(n0, 0), params, per_block ? sb.data() : s.data());  // rows' groups adjacent
        if (!per_block) repeat_floats(s.data(), params, per_group, sb.data());
    }
    if constexpr (ZP) if (!stored) {
        // One byte per group (i4: z + 8, as the codes are biased), then per block. The table is
        // read 8 bytes at a time from a chunk's first block: padded (the values past K meet zero
        // codes against zero activations).
        constexpr unsigned char kBias = T == DType::i4 ? 8 : 0;
        zg.resize(params + 64);
        zb.assign(params * per_group + 8, 0);
        unsigned char* group_bytes = per_block ? zb.data() : zg.data();
        const std::size_t first = W.param(n0, 0);
        if (W.zero->dtype() == T && first % 2 == 0 && params % 2 == 0) {
            expand_nibbles(W.zero->data() + first / 2, params / 2, kBias, group_bytes);
        } else {
            params_avx512(*W.zero, first, params, s.data());  // the scales are in sb by now
            bytes_from_floats(s.data(), params, kBias, group_bytes);
        }
        if (!per_block) repeat_bytes(zg.data(), params, per_group, zb.data());
    }
    DotConstants k = dot_constants(dot_table<T, ZP>());
    if constexpr (P == Products::int8 && !ZP) k.value_table = int_value_table<T>();
    const std::size_t tail_k = W.K % kDotChunk;
    // Two weight rows at a time for two rows of A (they share each load of X), else one: with one
    // row of A, four weight rows side by side (the earlier choice, faster with the codes in L2)
    // are four interleaved streams that DRAM fed at 26-34 GB/s of codes on two threads, where one
    // row at a time streams at 37-43 (a standalone loop, the same process; docs/compressed.md).
    const std::size_t rows_ahead = kDotPrefetchL2 / W.row_bytes();  // rows the codes' L2 prefetch runs ahead
    const auto rows_from = [&](std::size_t n, auto count) MOE_DOTLOOP {
        constexpr int R = decltype(count)::value;
        DotRows<R> rows{};
        rows.wide = gs % kDotChunk == 0;
        if (stored) {
            // The scales and zero points of the rows about as far ahead as the codes' L2 prefetch
            // (kDotPrefetchL2 bytes): streams an eighth and a thirty-second as fast as the codes,
            // which the hardware prefetchers leave alone (without these prefetches the kernel
            // waited on each new line: u4 streamed at 24-33 GB/s of codes, slower than with the
            // conversion passes).
            const std::size_t ahead = std::min(W.N - 1, n + R + rows_ahead), p = W.param(ahead, 0);
            const unsigned char* sp = W.scale->data() + 2 * p;
            for (std::size_t b = 0; b < 2 * G * R + 64; b += 64)
                _mm_prefetch(reinterpret_cast<const char*>(sp + b), _MM_HINT_T0);
            if constexpr (ZP) _mm_prefetch(reinterpret_cast<const char*>(W.zero->data() + p / 2), _MM_HINT_T0);
        }
        for (int r = 0; r < R; ++r) {
            rows.codes[r] = W.data + (n + r) * W.row_bytes();
            if (stored) {
                const std::size_t p = W.param(n + r, 0);
                rows.half_scales[r] = reinterpret_cast<const std::uint16_t*>(W.scale->data()) + p;
                if constexpr (ZP) {
                    rows.packed_zeros[r] = W.zero->data() + p / 2;
                    rows.zero_odd[r] = static_cast<unsigned>(p % 2);
                }
            } else {
                rows.scales[r] = sb.data() + row_offset(n + r);
                if constexpr (ZP) rows.zeros[r] = zb.data() + row_offset(n + r);
            }
        }
        __m512 acc[R][M][2];
        if (stored)
            dot_row<P, T, M, ZP ? ChunkZeros::packed_nibbles : ChunkZeros::none, R, true>(X, chunks, full, tail_k, rows,
                                                                                         k, acc);
        else
            dot_row<P, T, M, ZP ? ChunkZeros::block_bytes : ChunkZeros::none, R, false>(X, chunks, full, tail_k, rows,
                                                                                       k, acc);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            for (int m = 0; m < M; ++m)
                C[static_cast<std::size_t>(m) * ldc + n + r] =
                    _mm512_reduce_add_ps(_mm512_add_ps(acc[r][m][0], acc[r][m][1]));
    };
    constexpr int kRowsPerPass = M == 2 ? 2 : 1;
    std::size_t n = n0;
    for (; n + kRowsPerPass <= n1; n += kRowsPerPass) rows_from(n, std::integral_constant<int, kRowsPerPass>{});
    for (; n < n1; ++n) rows_from(n, std::integral_constant<int, 1>{});
}

template <Products P, DType T, bool ZP>
void dot_dispatch_m(DotInput<P> X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                    std::size_t n1) {
    switch (M) {
        case 1: return dot_rows_of<P, T, 1, ZP>(X, W, C, ldc, n0, n1);
        case 2: return dot_rows_of<P, T, 2, ZP>(X, W, C, ldc, n0, n1);
        case 3: return dot_rows_of<P, T, 3, ZP>(X, W, C, ldc, n0, n1);
        case 4: return dot_rows_of<P, T, 4, ZP>(X, W, C, ldc, n0, n1);
        case 5: return dot_rows_of<P, T, 5, ZP>(X, W, C, ldc, n0, n1);
        case 6: return dot_rows_of<P, T, 6, ZP>(X, W, C, ldc, n0, n1);
        case 7: return dot_rows_of<P, T, 7, ZP>(X, W, C, ldc, n0, n1);
        default: return dot_rows_of<P, T, 8, ZP>(X, W, C, ldc, n0, n1);
    }
}

template <Products P>
void dot_dispatch(DotInput<P> X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                  std::size_t n1) {
    switch (W.dtype) {
        case DType::u4:
            return W.zero ? dot_dispatch_m<P, DType::u4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<P, DType::u4, false>(X, M, W, C, ldc, n0, n1);
        case DType::i4:
            return W.zero ? dot_dispatch_m<P, DType::i4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<P, DType::i4, false>(X, M, W, C, ldc, n0, n1);
        default: return dot_dispatch_m<P, DType::f4e2m1, false>(X, M, W, C, ldc, n0, n1);
    }
}

void dot_rows(const std::uint16_t* X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
              std::size_t n1) {
    dot_dispatch<Products::bf16>(X, M, W, C, ldc, n0, n1);
}

void int_dot_rows(const IntActivations& X, std::size_t M, const WeightView& W, float* C, std::size_t ldc,
                  std::size_t n0, std::size_t n1) {
    dot_dispatch<Products::int8>(&X, M, W, C, ldc, n0, n1);
}

bool arrange_for_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W, IntActivations& X) {
    return M <= kCompressedRows && compressed_uses_decode_kernels(W) && cpu_has_int_dot() && is_nibble(W.dtype) &&
           arrange_int(A, M, lda, W.K, int_code_scale(W.dtype), X);
}

bool compressed_uses_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W) {
    IntActivations x;
    return arrange_for_int_dot(A, M, lda, W, x);
}

bool compressed_uses_bf16_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W) {
    return M <= kCompressedRows && compressed_uses_decode_kernels(W) && cpu_has_avx512_bf16() && is_nibble(W.dtype) &&
           bf16_dot_rows_ok(A, M, lda, W.K);
}

}  // namespace moe::backends::cpu
