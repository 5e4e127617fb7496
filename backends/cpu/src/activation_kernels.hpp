#pragma once
// The expert activations over one row, f32, vectorized where the CPU allows. Same operations in
// the same order as the scalar definition (scalar_* below); only exp differs: a polynomial
// within 1 ulp instead of libm's, inside the 8 u_C |a| that spec/tolerance.md gives the
// activation's evaluation.
#include <cstddef>

namespace moe::backends::cpu {

// GEMM2 (gate and linear lanes interleaved in `first`, 2 * I values):
//   act[j] = (clamp(first[2j + 1 - g], -L, L) + 1) * swish(min(first[2j + g], L); beta)
void swiglu_interleaved_row(const float* first, float* act, std::size_t I, int gate_lane, float limit, float beta);
// GEMM3: act[j] = swish(gate[j]; beta) * up[j]
void swiglu_split_row(const float* gate, const float* up, float* act, std::size_t I, float beta);

// The scalar definitions (the reference for the vector versions; also the fallback).
void scalar_swiglu_interleaved_row(const float* first, float* act, std::size_t I, int gate_lane, float limit, float beta);
void scalar_swiglu_split_row(const float* gate, const float* up, float* act, std::size_t I, float beta);

}  // namespace moe::backends::cpu
