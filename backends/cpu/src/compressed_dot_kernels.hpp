#pragma once
// The dot-product decode kernels for 4-bit weights, which compressed_gemm (compressed_kernels.cpp)
// takes for few rows of A: int8 products (AVX512_VNNI) on activations on a per-block grid
// (int_dot_activations.hpp) where compressed_uses_int_dot says so, else bf16 products
// (AVX512_BF16) on bf16 activations where compressed_uses_bf16_dot does; why their results stay
// within an f32 multiply-add chain's bound is written in dot_chunk_decode.hpp.
#include <cstddef>
#include <cstdint>

#include "int_dot_activations.hpp"
#include "moe/backends/cpu_backend.hpp"
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

// The same from A's rows arranged by arrange_int (with int_code_scale(W.dtype)), M <= 8.
void int_dot_rows(const IntActivations& X, std::size_t M, const WeightView& W, float* C, std::size_t ldc,
                  std::size_t n0, std::size_t n1);

// What arrange_int's code_scale is for a 4-bit type: the int8 kernels take MXFP4's codes as twice
// their E2M1 values (integers), so its units carry 1/2.
inline double int_code_scale(DType t) { return t == DType::f4e2m1 ? 0.5 : 1.0; }

// Arranges A's M rows into X for the int8 kernels and returns true where they take this call: a
// 4-bit weight on the decode kernels' terms, `products` int8 (automatic: as cpu_prefers_int_dot
// says), a CPU with AVX512_VNNI, VBMI and GFNI, A's blocks on their grid (arrange_int).
bool arrange_for_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W, DecodeProducts products,
                         IntActivations& X);

}  // namespace moe::backends::cpu
