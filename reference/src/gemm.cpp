#include "moe/reference/gemm.hpp"

#include <cstring>
#include <stdexcept>

namespace moe::reference {

namespace {

// A GCC/Clang vector of the 8 lanes: element-wise IEEE operations, so the lanes' values are the
// same whether the compiler maps it to one AVX-512 register, two AVX2 or four SSE2 ones.
typedef double lanes_t __attribute__((vector_size(kLanes * sizeof(double))));

// always_inline: these helpers must be compiled inside each target clone of gemm_block below,
// not once for the baseline instruction set.
#define MOE_ALWAYS_INLINE inline __attribute__((always_inline))

MOE_ALWAYS_INLINE lanes_t load(const double* p) {
    lanes_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

MOE_ALWAYS_INLINE double combine(lanes_t l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

// An R x C block of outputs; every output keeps its own 8 lanes.
template <int R, int C>
MOE_ALWAYS_INLINE void tile(const double* const* a, const double* const* b, std::size_t stride, double* c, std::size_t ldc) {
    lanes_t acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < C; ++q) acc[r][q] = lanes_t{} ;
    for (std::size_t k = 0; k < stride; k += kLanes) {
        lanes_t bv[C];
        for (int q = 0; q < C; ++q) bv[q] = load(b[q] + k);
        for (int r = 0; r < R; ++r) {
            const lanes_t av = load(a[r] + k);
            for (int q = 0; q < C; ++q) acc[r][q] += av * bv[q];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < C; ++q) c[r * ldc + q] = combine(acc[r][q]);
}

constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

template <int R>
MOE_ALWAYS_INLINE void tile_cols(int cols, const double* const* a, const double* const* b, std::size_t stride, double* c,
                      std::size_t ldc) {
    switch (cols) {
        case 4: tile<R, 4>(a, b, stride, c, ldc); break;
        case 3: tile<R, 3>(a, b, stride, c, ldc); break;
        case 2: tile<R, 2>(a, b, stride, c, ldc); break;
        default: tile<R, 1>(a, b, stride, c, ldc); break;
    }
}

// Compiled for several instruction sets, chosen at load time; all give the same bits since
// contraction is off (-ffp-contract=off) and the lanes are independent.
__attribute__((target_clones("avx512f", "avx2", "default")))
void gemm_block(const PaddedMatrix& a, const PaddedMatrix& b, double* c, std::size_t ldc, std::size_t m0,
                std::size_t n0, std::size_t n1) {
    const std::size_t m1 = std::min(a.rows, m0 + kTileRows);
    const int rows = static_cast<int>(m1 - m0);
    const double* ap[kTileRows];
    for (int r = 0; r < rows; ++r) ap[r] = a.row(m0 + r);
    for (std::size_t n = n0; n < n1; n += kTileCols) {
        const int cols = static_cast<int>(std::min<std::size_t>(kTileCols, n1 - n));
        const double* bp[kTileCols];
        for (int q = 0; q < cols; ++q) bp[q] = b.row(n + q);
        double* cp = c + m0 * ldc + n;
        switch (rows) {
            case 4: tile_cols<4>(cols, ap, bp, a.stride, cp, ldc); break;
            case 3: tile_cols<3>(cols, ap, bp, a.stride, cp, ldc); break;
            case 2: tile_cols<2>(cols, ap, bp, a.stride, cp, ldc); break;
            default: tile_cols<1>(cols, ap, bp, a.stride, cp, ldc); break;
        }
    }
}

}  // namespace

double dot_fixed_order(const double* a, const double* b, std::size_t stride) {
    lanes_t acc{};
    for (std::size_t k = 0; k < stride; k += kLanes) acc += load(a + k) * load(b + k);
    return combine(acc);
}

void gemm_abt(const PaddedMatrix& a, const PaddedMatrix& b, double* c, std::size_t ldc, int threads) {
    if (a.cols != b.cols || a.stride != b.stride) throw std::logic_error("gemm_abt: inner sizes differ");
    // Work items: a panel of kTileRows rows of A against a block of B rows small enough to stay
    // in cache while the panel streams over it.
    const std::size_t n_block = 64;
    const std::size_t m_items = (a.rows + kTileRows - 1) / kTileRows;
    const std::size_t n_items = (b.rows + n_block - 1) / n_block;
    const long long items = static_cast<long long>(m_items * n_items);
    const bool parallel = threads > 1 && items > 1 && a.rows * b.rows * a.cols >= kParallelMacs;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (parallel)
    for (long long it = 0; it < items; ++it) {
        // n-block outer so that consecutive items reuse the same B block.
        const std::size_t nb = static_cast<std::size_t>(it) / m_items;
        const std::size_t mb = static_cast<std::size_t>(it) % m_items;
        const std::size_t n0 = nb * n_block;
        gemm_block(a, b, c, ldc, mb * kTileRows, n0, std::min(b.rows, n0 + n_block));
    }
}

}  // namespace moe::reference
