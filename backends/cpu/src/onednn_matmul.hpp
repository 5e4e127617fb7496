#pragma once
// Larger GEMMs (more than a few rows per expert) through oneDNN's matmul primitive. Chosen by
// measurement over OpenBLAS, BLIS and libxsmm on this machine (docs/cpu-backend.md).
#include <cstddef>
#include <memory>

#include "weight_view.hpp"

namespace moe::backends::cpu {

// Whether the library's bf16 matmul may take a reduction of K: only an even one. Debian 12's
// oneDNN (2.6.3) picks its AMX kernels for many bf16 shapes, and with an odd K some of them die
// of SIGILL (tdpbf16ps on an unconfigured tile): with two threads over M 1-40, K 31-127, N
// 16-200, 106 odd-K primitives crashed (K = 63 against N = 65, 144 or 176) beside 1470 that ran
// on AMX, and none of the 1576 even-K AMX ones (tools/gemm-study/onednn_odd_k_probe.cpp). bf16
// operands with an odd K take the f32 path (exact widening, the same f32 products).
inline bool onednn_bf16_reduction(std::size_t K) { return K % 2 == 0; }

// C[M, N] (f32, row stride ldc) = A[M, K] (f32 or bf16, row stride lda) W^T, the weights read in
// place in either layout ([N, K] as strided "ba", [K, N] as "ab"). W's type is f32, or bf16 when
// A is bf16 (the bf16 dot-product instructions, f32 accumulation).
void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const WeightView& W, float* C,
                   std::size_t ldc, int threads);

// Every expert of one weight tensor reordered once into the library's blocked layout for its
// matmul (the layout depends on N, K and the type, not on M, so one copy serves every block of
// rows). Reading it skips the per-call packing the library does on plain weights: 1.1-1.6x
// faster at 16-64 rows (docs/cpu-backend.md). f32 and bf16 weights keep their type; f16
// weights are widened to f32 (the library has no f16 matmul without AVX512-FP16).
class PackedWeights {
public:
    // Compressed weights (with their scale and zero point) are dequantised to f32 first.
    PackedWeights(const Tensor& weights, WeightLayout layout, int threads, const Tensor* scale = nullptr,
                  const Tensor* zero_point = nullptr);
    DType dtype() const;  // f32 or bf16
    std::size_t N() const;
    std::size_t K() const;
    std::size_t bytes() const;
    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    std::shared_ptr<const Impl> impl_;
};

// The same product with W = `packed`'s expert `expert` (A: f32 for f32 weights, bf16 for bf16).
void onednn_matmul(const void* A, DType a_type, std::size_t M, std::size_t lda, const PackedWeights& packed,
                   std::size_t expert, float* C, std::size_t ldc, int threads);

}  // namespace moe::backends::cpu
