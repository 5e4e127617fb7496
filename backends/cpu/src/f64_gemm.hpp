#pragma once
// The cpu backend's own f64 GEMM, for f64 data: the implementation under test computes its
// products itself rather than borrow the reference's (the oracle must not share code with what
// it judges). C[M, N] = A[M, K] W^T, W one expert of the op's weight tensor in either layout.
#include <cstddef>

#include "weight_view.hpp"

namespace moe::backends::cpu {

// Each C element is a sum over k in ascending order, by one thread, so the result does not
// depend on `threads`. Columns at or past n_limit are left untouched (a mutant's partial GEMM).
void f64_gemm(const double* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t n_limit, double* C,
              std::size_t ldc, int threads);

}  // namespace moe::backends::cpu
