#pragma once
// The bf16 dot-product decode kernels (AVX512_BF16) for 4-bit weights on bf16 activations, which
// compressed_gemm (compressed_kernels.cpp) takes when compressed_uses_bf16_dot says so; why their
// results equal an f32 multiply-add chain's is written in compressed_dot_kernels.cpp.
#include <cstddef>
#include <cstdint>

#include "weight_view.hpp"

namespace moe::backends::cpu {

inline constexpr std::size_t kDotChunk = 128;  // weights per 64-byte load

// Every element of the M rows of A is bf16 exactly and every nonzero |x| >= 2^-100.
bool bf16_dot_rows_ok(const float* A, std::size_t M, std::size_t lda, std::size_t K);

// A's M rows as bf16 in the kernels' order, each K rounded up to whole chunks (zeros past K):
// M * ceil(K / kDotChunk) * kDotChunk values into X.
void arrange_bf16(const float* A, std::size_t M, std::size_t lda, std::size_t K, std::uint16_t* X);

// C[m * ldc + n] for rows [n0, n1) of W from the arranged activations X (M <= 8).
void dot_rows(const std::uint16_t* X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
              std::size_t n1);

}  // namespace moe::backends::cpu
