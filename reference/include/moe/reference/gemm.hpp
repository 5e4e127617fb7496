#pragma once
// The reference's only matrix product: C[m, n] = dot(A[m, :], B[n, :]) in f64 with one fixed
// summation order, whatever the machine, vector width or thread count:
//   lane j (j = 0..7) accumulates a[k] * b[k] for k = j, j + 8, j + 16, ... starting from +0,
//   then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
// Rows are padded with zeros to a multiple of 8 (kLanes); the padding adds +0 * +0 = +0 to a lane,
// which never changes it.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "moe/spec/tensor.hpp"  // DefaultInitAllocator

namespace moe::reference {

inline constexpr std::size_t kLanes = 8;
inline std::size_t padded(std::size_t k) { return (k + kLanes - 1) / kLanes * kLanes; }

// Row-major matrix of `rows` x `cols` doubles, each row padded with zeros to `stride`.
struct PaddedMatrix {
    std::size_t rows = 0, cols = 0, stride = 0;
    // Grows without writing zeros (reshape_unfilled); the constructor still zero-fills.
    std::vector<double, DefaultInitAllocator<double>> data;
    PaddedMatrix() = default;
    PaddedMatrix(std::size_t r, std::size_t c) : rows(r), cols(c), stride(padded(c)), data(r * padded(c), 0.0) {}
    // Makes this r x c for a caller that writes columns [0, c) of every row itself: only the
    // padding is zeroed, and the storage is reused when it is large enough. Zero-filling a fresh
    // f64 copy of every expert's weights, each then overwritten, was a third of the reference's
    // time on a model-sized case (with the page faults of memory taken anew for each expert).
    void reshape_unfilled(std::size_t r, std::size_t c) {
        rows = r;
        cols = c;
        stride = padded(c);
        data.resize(r * stride);  // elements past the old size are left unwritten
        if (stride != c)
            for (std::size_t i = 0; i < r; ++i) std::fill(row(i) + c, row(i) + stride, 0.0);
    }
    double* row(std::size_t r) { return data.data() + r * stride; }
    const double* row(std::size_t r) const { return data.data() + r * stride; }
};

// Multiply-adds under which gemm_abt runs on the calling thread whatever `threads` says: about
// 0.1 ms of work. A parallel region costs more than a smaller product, and far more when other
// processes hold the cores: libgomp's threads spin at the region's barrier while a descheduled
// team member finishes its share (two selftests side by side on 2 cores took 11 minutes each).
inline constexpr std::size_t kParallelMacs = std::size_t(1) << 18;

// C (M x N, leading dimension ldc) = A (M x K) times B^T (B is N x K); A.cols == B.cols.
// Parallel over output tiles when `threads` > 1 and M N K >= kParallelMacs; the result does not
// depend on it.
void gemm_abt(const PaddedMatrix& a, const PaddedMatrix& b, double* c, std::size_t ldc, int threads);

// The fixed-order dot product of two padded rows of length `stride` (a multiple of kLanes).
double dot_fixed_order(const double* a, const double* b, std::size_t stride);

}  // namespace moe::reference
