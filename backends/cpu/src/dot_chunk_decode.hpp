#pragma once
// What the dot-product decode kernels (compressed_dot_kernels.cpp) do with one 128-weight chunk,
// for each of their two product engines: the arithmetic of each and why its result stays within an
// f32 chain's bound; the tables and constants; a chunk's codes decoded into bf16 values (vpermw) or
// into code bytes carrying the value plus 16 (vpdpbusd); its zero points spread to every byte; and
// the int8 engine's digit sums.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compressed_values.hpp"
#include "weight_view.hpp"

namespace moe::backends::cpu {

inline std::uint32_t f32_bits(float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}

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
    __m512i table, lane_block, low_nibbles, block_select;
    // A four-chunk step's chunk u: its zero nibbles (from a row's first nibble even or odd: see
    // dot_row), its scale lanes.
    __m512i step_select[2][4], step_lanes[4];
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
    // The same from a step's stored nibbles (groups of 32): chunk u's block b from bit 16u + 4b of
    // the word the step reads (4 more when the row's first nibble is a byte's high one; block 3's
    // qwords then hold the word one byte on, as its last nibble lies in the ninth byte), its
    // neighbour's bits above it cleared afterwards.
    for (int odd = 0; odd < 2; ++odd)
        for (int u = 0; u < 4; ++u) {
            const auto sel = [&](int b) {
                const int bit = 16 * u + 4 * b + 4 * odd - (b == 3 ? 8 * odd : 0);
                return static_cast<long long>(0x0101010101010101ull * unsigned(bit));
            };
            k.step_select[odd][u] = _mm512_set_epi64(sel(3), sel(3), sel(2), sel(2), sel(1), sel(1), sel(0), sel(0));
        }
    for (int u = 0; u < 4; ++u) k.step_lanes[u] = _mm512_add_epi32(k.lane_block, _mm512_set1_epi32(4 * u));
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

}  // namespace moe::backends::cpu
