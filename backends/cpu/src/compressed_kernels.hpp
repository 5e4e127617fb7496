#pragma once
// Compressed expert weights on the CPU (spec/compressed.md; docs/compressed.md): decode kernels that
// read the stored bytes in place (u8, i8, u4, i4, MXFP4, FP8), which is what a token's time is
// spent on, and the dequantisation to f32 (or exactly to f64) that prepare() and the larger GEMMs use.
#include <cstddef>

#include "moe/backends/cpu_backend.hpp"
#include "weight_view.hpp"

namespace moe::backends::cpu {

// The most rows of A the decode kernels take; more go through the library on dequantised weights.
inline constexpr std::size_t kCompressedRows = 8;

// C[m * ldc + n] = sum_k A[m * lda + k] * W_f(n, k) for m < M <= kCompressedRows and n < N (a
// compressed NK weight). Each thread streams a slice of the weight rows: each stored byte is read
// once. A group's products are summed in f32 (by the int8 dot kernels exactly, as integers, then
// rounded once) and scaled once, s * sum (q - z) x (the error the tolerance's dequantisation term
// bounds: spec/tolerance.md); an element that comes out NaN or
// infinite is computed again from W_f rounded to f32 (an infinite scale, or a sum past f32's range
// that the dequantised products stay within). Threads split the columns; the result does not
// depend on their number. `products`: which dot-product kernels 4-bit weights take (cpu_backend.hpp).
void compressed_gemm(const float* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t N, float* C,
                     std::size_t ldc, int threads, DecodeProducts products = DecodeProducts::automatic);

// Rows [n0, n0 + rows) of a compressed weight, W_f = (W - Z) * S exact then rounded once to S
// (float: one rounding; double: exact), into out[r * K + k].
template <class S>
void dequantize_rows(const WeightView& W, std::size_t n0, std::size_t rows, S* out);

// The whole expert dequantised to f32 with `threads` threads.
void dequantize_expert_f32(const WeightView& W, float* out, int threads);

// Whether the AVX-512 decode kernels run for this weight (else the portable path): the group
// size and K are multiples of 32.
bool compressed_uses_decode_kernels(const WeightView& W);

// Whether compressed_gemm takes the bf16 dot-product kernels (AVX512_BF16) for these rows of A:
// 4-bit weights (u4, i4, MXFP4) on the decode kernels' terms, a CPU with AVX512_BF16, and every
// element of A bf16 exactly with every nonzero |x| >= 2^-100 (bf16 data; else the f32 kernels,
// whose results these equal up to the order of the additions: compressed_kernels.cpp).
bool compressed_uses_bf16_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W);

// Whether compressed_gemm takes the int8 dot-product kernels (AVX512_VNNI) for these rows of A,
// before the bf16 ones: 4-bit weights on the decode kernels' terms, `products` int8 (automatic:
// on an Intel processor, cpu_features.hpp), a CPU with AVX512_VNNI, VBMI and GFNI, and every
// 32-element block of A's rows on one grid (int_dot_activations.hpp: bf16 data whose blocks span
// at most about 15 binades).
bool compressed_uses_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W,
                             DecodeProducts products = DecodeProducts::automatic);

}  // namespace moe::backends::cpu
