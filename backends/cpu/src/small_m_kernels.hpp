#pragma once
// f32 kernels for a few rows of A against one expert's weights read in their own type (f32, f16
// or bf16, converted in registers): each weight element is loaded once per call, which is what
// decode (1-8 tokens per expert) is bound by.
#include <cstddef>

#include "weight_view.hpp"

namespace moe::backends::cpu {

inline constexpr std::size_t kSmallM = 8;

// C[m * ldc + n] = sum_k A[m * lda + k] * W(n, k), for m < M (M <= kSmallM) and n in [n0, n1).
void small_m_gemm(const float* A, std::size_t M, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                  std::size_t n0, std::size_t n1);

// out[i] = f16 bits[i] widened to f32, for i < count (vectorized where the CPU allows).
void f16_to_f32(const unsigned char* bits, std::size_t count, float* out);
// The same with `threads` threads (a whole expert's weights).
void f16_to_f32(const unsigned char* bits, std::size_t count, float* out, int threads);

// Whether the AVX-512 kernels are in use (else a portable scalar version).
bool small_m_uses_avx512();

}  // namespace moe::backends::cpu
