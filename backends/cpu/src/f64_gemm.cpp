#include "f64_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "compressed_kernels.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends::cpu {

namespace {

// One expert's weights as N rows of K f64 values, whatever the stored layout: a KN tensor is
// transposed once so that every dot product reads two contiguous rows.
const double* weight_rows_f64(const WeightView& W, std::vector<double>& scratch) {
    if (W.compressed()) {  // dequantised exactly (spec/compressed.md): f64 data computes in f64
        scratch.resize(W.N * W.K);
        dequantize_rows(W, 0, W.N, scratch.data());
        return scratch.data();
    }
    if (W.dtype != DType::f64) throw InputError("cpu backend: f64 data with " + std::string(dtype_name(W.dtype)) + " weights");
    const auto* w = reinterpret_cast<const double*>(W.data);
    if (W.layout == WeightLayout::NK) return w;
    scratch.resize(W.N * W.K);
    for (std::size_t k = 0; k < W.K; ++k)
        for (std::size_t n = 0; n < W.N; ++n) scratch[n * W.K + k] = w[k * W.N + n];
    return scratch.data();
}

}  // namespace

void f64_gemm(const double* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t n_limit, double* C,
              std::size_t ldc, int threads) {
    std::vector<double> scratch;
    const double* w = weight_rows_f64(W, scratch);
    const std::size_t N = std::min(W.N, n_limit), K = W.K;
    const long long items = static_cast<long long>(M * N);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && items * static_cast<long long>(K) > 65536)
    for (long long it = 0; it < items; ++it) {
        const std::size_t m = static_cast<std::size_t>(it) / N, n = static_cast<std::size_t>(it) % N;
        const double* a = A + m * lda;
        const double* b = w + n * K;
        double sum = 0.0;
        for (std::size_t k = 0; k < K; ++k) sum += a[k] * b[k];
        C[m * ldc + n] = sum;
    }
}

}  // namespace moe::backends::cpu
