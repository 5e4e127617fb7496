#pragma once
// Larger GEMMs (more than a few rows per expert) through oneDNN's matmul primitive, which reads
// the weights in place in either layout ([N, K] as strided "ba", [K, N] as "ab"). Chosen by
// measurement over OpenBLAS, BLIS and libxsmm on this machine (README, "The cpu backend").
#include <cstddef>

#include "weight_view.hpp"

namespace moe::backends::cpu {

// C[M, N] (f32, row stride ldc) = A[M, K] (f32 or bf16, row stride lda) W^T. W's type is f32, or
// bf16 when A is bf16 (the bf16 dot-product instructions, f32 accumulation).
void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const WeightView& W, float* C,
                   std::size_t ldc, int threads);

}  // namespace moe::backends::cpu
