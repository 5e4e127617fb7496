#include "expert_gemm.hpp"

#include <algorithm>

#include "moe/reference/gemm.hpp"
#include "moe/reference/operands.hpp"
#include "small_m_kernels.hpp"
#include "weight_view.hpp"

namespace moe::backends::cpu {

void expert_gemm(const float* A, std::size_t M, std::size_t lda, const GemmCall& call, float* C, std::size_t ldc,
                 int threads) {
    const WeightView W = expert_view(*call.weights, call.expert, call.layout);
    const std::size_t N = std::min(W.N, call.n_limit);
    // Work items: (8-row block of A, 64-column block of W). Column blocks outermost, so a thread
    // streams one slice of the weights across every row block while it is in cache.
    constexpr std::size_t kCols = 64;
    const std::size_t row_blocks = (M + kSmallM - 1) / kSmallM;
    const std::size_t col_blocks = (N + kCols - 1) / kCols;
    const long long items = static_cast<long long>(row_blocks * col_blocks);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && items > 1)
    for (long long it = 0; it < items; ++it) {
        const std::size_t cb = static_cast<std::size_t>(it) / row_blocks, rb = static_cast<std::size_t>(it) % row_blocks;
        const std::size_t m0 = rb * kSmallM, n0 = cb * kCols;
        small_m_gemm(A + m0 * lda, std::min(kSmallM, M - m0), lda, W, C + m0 * ldc, ldc, n0, std::min(N, n0 + kCols));
    }
}

void expert_gemm(const double* A, std::size_t M, std::size_t lda, const GemmCall& call, double* C, std::size_t ldc,
                 int threads) {
    const reference::PaddedMatrix w = reference::weight_rows(*call.weights, call.expert, call.layout);
    reference::PaddedMatrix a(M, w.cols);
    for (std::size_t m = 0; m < M; ++m) std::copy(A + m * lda, A + m * lda + w.cols, a.row(m));
    std::vector<double> c(M * w.rows);
    reference::gemm_abt(a, w, c.data(), w.rows, threads);
    const std::size_t N = std::min(w.rows, call.n_limit);
    for (std::size_t m = 0; m < M; ++m) std::copy(c.begin() + m * w.rows, c.begin() + m * w.rows + N, C + m * ldc);
}

}  // namespace moe::backends::cpu
