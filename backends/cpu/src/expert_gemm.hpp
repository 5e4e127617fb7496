#pragma once
// The GEMM of one expert's routed rows: C[M, N] = A[M, K] W^T, W read from the op's weight tensor
// in place. One engine per compute type.
#include <cstddef>

#include "moe/backends/cpu_backend.hpp"
#include "moe/spec/problem.hpp"

namespace moe::backends::cpu {

class PackedWeights;

struct GemmCall {
    const Tensor* weights = nullptr;
    std::size_t expert = 0;
    WeightLayout layout = WeightLayout::NK;
    std::size_t n_limit = static_cast<std::size_t>(-1);  // compute only columns below this (a mutant's bug)
    const PackedWeights* packed = nullptr;  // the same weights in the library's layout (prepare()), if any
    // Compressed weights (spec/compressed.md): their scale and zero point; null otherwise.
    const Tensor* scale = nullptr;
    const Tensor* zero_point = nullptr;
    DecodeProducts products = DecodeProducts::automatic;  // 4-bit weights' decode kernels (cpu_backend.hpp)
};

// Whether the pipeline keeps its intermediates in bf16 for this data type (bf16: the library's
// bf16 matmul takes bf16 activations).
bool rounds_bf16_intermediates(DType data);

// f32: small M straight from the weights (each weight read once; compressed weights decoded in
// place), larger M through the blocked engine (compressed weights dequantised to f32 for it, by
// prepare() or here). Threads split the work; the result does not depend on their number.
void expert_gemm(const float* A, std::size_t M, std::size_t lda, const GemmCall& call, float* C, std::size_t ldc,
                 int threads);
// f64: the backend's own f64 GEMM (f64_gemm.hpp).
void expert_gemm(const double* A, std::size_t M, std::size_t lda, const GemmCall& call, double* C, std::size_t ldc,
                 int threads);

}  // namespace moe::backends::cpu
