#pragma once
// A's rows as integers for the int8 dot kernels (compressed_dot_kernels.cpp): each 32-element block
// of K, across all M rows, on one power-of-two grid, every value x = X * unit with X an integer,
// |X| < 2^22, held as three signed bytes (X = d0 + 2^8 d1 + 2^16 d2). vpdpbusd then multiplies
// four code bytes by four digit bytes and adds the products to an int32 lane exactly: the sums of
// codes times activations are exact integers. bf16 values lie on such a grid where their block
// spans at most about 15 binades (the largest |x| over the smallest's lowest set bit below 2^22).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace moe::backends::cpu {

// One 128-element chunk of one row of A, in the order the decoded code bytes come (byte b of a
// chunk's 64 code bytes holds elements 2b, low nibble, and 2b + 1, high nibble): digits[d][0][b] is
// digit d of element 2b, digits[d][1][b] of element 2b + 1. bias[i] = -16 * (the sum of X over
// elements 8i..8i+7): the kernels start lane i from it, since they multiply by code bytes that
// carry the value plus 16 (so that they are unsigned, as vpdpbusd's first operand must be).
struct alignas(64) IntChunk {  // whole-vector loads of its digits start on a line (cache_line_vector.hpp)
    std::int8_t digits[3][2][64];
    std::int32_t bias[16];
};

struct IntActivations {
    std::size_t chunks = 0;
    std::vector<IntChunk> rows;      // row m's chunk c at m * chunks + c
    std::vector<float> lane_units;   // 16 a chunk: lane i of chunk c (elements 8i..8i+7), its block's unit
    std::vector<float> block_units;  // one a 32-element block (padded by 16 for whole-vector loads)
};

// A block's unit is 2^(E - 22) for its largest |x| in [2^(E-1), 2^E), and must lie in
// [2^-100, 2^100] (so that it times any f16 scale, and any f32 sum times it, is a normal f32: the
// products stay exact). An all-zero block takes unit 1.
inline constexpr int kIntDigitsBits = 22, kIntUnitMinExp = -100, kIntUnitMaxExp = 100;

// Arranges A's M rows (M * chunks chunks, zeros past K) into out and returns true when every
// element is finite and an integer multiple of its block's unit; else returns false (out is then
// unspecified): the caller takes other kernels. code_scale multiplies every unit (MXFP4: the codes
// are twice the E2M1 values, so 1/2; else 1).
bool arrange_int(const float* A, std::size_t M, std::size_t lda, std::size_t K, double code_scale,
                 IntActivations& out);

}  // namespace moe::backends::cpu
