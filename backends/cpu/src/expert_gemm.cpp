#include "expert_gemm.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bf16_matmul_domain.hpp"
#include "cache_line_vector.hpp"
#include "compressed_kernels.hpp"
#include "element_convert.hpp"
#include "f64_gemm.hpp"
#include "onednn_matmul.hpp"
#include "parallel_work.hpp"
#include "small_m_kernels.hpp"
#include "weight_view.hpp"

namespace moe::backends::cpu {

namespace {

// A's rows as bf16 for the bf16 x bf16 matmul (f32 accumulation). A's values are bf16 already (the
// inputs, or the activation the pipeline stores in bf16, as the backend declares), so this is exact.
const std::uint16_t* bf16_rows(const float* A, std::size_t M, std::size_t lda, std::size_t K, int threads) {
    static thread_local CacheLineVector<std::uint16_t> a_bf16;  // this thread's, reused between calls
    a_bf16.resize(M * K);
    std::uint16_t* a = a_bf16.data();  // worker threads must use this one, not their own
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && M * K > 65536)
    for (long long m = 0; m < static_cast<long long>(M); ++m)
        for (std::size_t k = 0; k < K; ++k)
            a[static_cast<std::size_t>(m) * K + k] = f32_to_bf16_bits(A[static_cast<std::size_t>(m) * lda + k]);
    return a;
}

void small_m_path(const float* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t N, float* C,
                  std::size_t ldc, int threads) {
    // Work items: (8-row block of A, 64-column block of W). Column blocks outermost, so a thread
    // streams one slice of the weights across every row block while it is in cache.
    constexpr std::size_t kCols = 64;
    const std::size_t row_blocks = (M + kSmallM - 1) / kSmallM;
    const std::size_t col_blocks = (N + kCols - 1) / kCols;
    const long long items = static_cast<long long>(row_blocks * col_blocks);
    const bool parallel = threads > 1 && items > 1 && M * N * W.K >= kMinParallelWork;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (parallel)
    for (long long it = 0; it < items; ++it) {
        const std::size_t cb = static_cast<std::size_t>(it) / row_blocks, rb = static_cast<std::size_t>(it) % row_blocks;
        const std::size_t m0 = rb * kSmallM, n0 = cb * kCols;
        small_m_gemm(A + m0 * lda, std::min(kSmallM, M - m0), lda, W, C + m0 * ldc, ldc, n0, std::min(N, n0 + kCols));
    }
}

}  // namespace

bool rounds_bf16_intermediates(DType data) { return data == DType::bf16; }

void expert_gemm(const float* A, std::size_t M, std::size_t lda, const GemmCall& call, float* C, std::size_t ldc,
                 int threads) {
    WeightView W = expert_view(*call.weights, call.expert, call.layout, call.scale, call.zero_point);
    const bool partial = call.n_limit < W.N;  // a mutant's partial GEMM: the library computes every column
    if (W.compressed()) {
        // Decode (a few rows): the kernels read the stored bytes in place, a quarter to an eighth
        // of the f32 bytes (the reason to compress). More rows: the library on f32 weights,
        // dequantised once by prepare(), else here, one expert at a time.
        if (M <= kCompressedRows)
            return compressed_gemm(A, M, lda, W, std::min(W.N, call.n_limit), C, ldc, threads, call.products);
        if (call.packed && !partial) return onednn_matmul(A, DType::f32, M, lda, *call.packed, call.expert, C, ldc, threads);
        static thread_local std::vector<float> dequantized;
        dequantized.resize(W.N * W.K);
        dequantize_expert_f32(W, dequantized.data(), threads);
        WeightView plain;
        plain.data = reinterpret_cast<const unsigned char*>(dequantized.data());
        plain.dtype = DType::f32;
        plain.N = W.N;
        plain.K = W.K;
        if (partial) return small_m_path(A, M, lda, plain, call.n_limit, C, ldc, threads);
        return onednn_matmul(A, DType::f32, M, lda, plain, C, ldc, threads);
    }
    // f16 weights with one or two rows: our kernels read the f16 weights (half the bytes of the
    // packed f32 copy) and are not yet compute-bound; from three rows on, widening f16 in the
    // inner loop costs more than the extra bytes (moe-bench --engine-study; mixtral at T = 8).
    const bool f16_decode = W.dtype == DType::f16 && M <= 2;
    if (call.packed && !partial && !f16_decode) {
        // Weights in the library's layout: its kernels beat ours at every M, even at one row
        // (they stream the packed panels at 1.3-1.6x our rate on one thread; docs/cpu-backend.md).
        if (call.packed->dtype() == DType::bf16) {
            // Activations the bf16 matmul would flush (bf16_matmul_domain.hpp): our kernels, in f32.
            if (!bf16_matmul_rows(A, M, lda, W.K)) return small_m_path(A, M, lda, W, W.N, C, ldc, threads);
            return onednn_matmul(bf16_rows(A, M, lda, W.K, threads), DType::bf16, M, W.K, *call.packed, call.expert, C,
                                 ldc, threads);
        }
        return onednn_matmul(A, DType::f32, M, lda, *call.packed, call.expert, C, ldc, threads);
    }
    if (M <= kSmallM || partial) {
        // Few rows: each weight is read once, in its own type, which is what decode is bound by.
        return small_m_path(A, M, lda, W, std::min(W.N, call.n_limit), C, ldc, threads);
    }
    if (W.dtype == DType::f32) return onednn_matmul(A, DType::f32, M, lda, W, C, ldc, threads);
    if (W.dtype == DType::bf16) {
        if (!onednn_bf16_reduction(W.K) || !bf16_matmul_rows(A, M, lda, W.K) || !bf16_matmul_operands(W.data, W.N * W.K))
            return small_m_path(A, M, lda, W, W.N, C, ldc, threads);
        return onednn_matmul(bf16_rows(A, M, lda, W.K, threads), DType::bf16, M, W.K, W, C, ldc, threads);
    }
    // f16: the library has no f16 matmul on CPUs without AVX512-FP16, so the expert's weights are
    // widened to f32 (exactly) first.
    // Kept between calls: allocating (and page-faulting) 66 MB per expert would cost more than the
    // conversion itself.
    static thread_local std::vector<float> wide_f32;
    wide_f32.resize(W.N * W.K);
    f16_to_f32(W.data, wide_f32.size(), wide_f32.data(), threads);
    W.data = reinterpret_cast<const unsigned char*>(wide_f32.data());
    W.dtype = DType::f32;
    onednn_matmul(A, DType::f32, M, lda, W, C, ldc, threads);
}

void expert_gemm(const double* A, std::size_t M, std::size_t lda, const GemmCall& call, double* C, std::size_t ldc,
                 int threads) {
    f64_gemm(A, M, lda, expert_view(*call.weights, call.expert, call.layout, call.scale, call.zero_point), call.n_limit,
             C, ldc, threads);
}

}  // namespace moe::backends::cpu
