#include "moe/reference/operands.hpp"

#include <algorithm>

#include "moe/spec/compression.hpp"

namespace moe::reference {

PaddedMatrix hidden_rows(const Problem& p, const Dims& d) {
    const Tensor& x = p.input(kHiddenStates);
    PaddedMatrix m;
    m.reshape_unfilled(d.T, d.H);
    for (std::size_t t = 0; t < d.T; ++t) x.to_f64(t * d.H, d.H, m.row(t));
    return m;
}

PaddedMatrix weight_rows(const Problem& p, const char* name, std::size_t e, WeightLayout layout) {
    PaddedMatrix m;
    weight_rows_into(p, name, e, layout, m);
    return m;
}

// Every branch writes columns [0, K) of every row, so the matrix is not zero-filled first.
void weight_rows_into(const Problem& p, const char* name, std::size_t e, WeightLayout layout, PaddedMatrix& m) {
    const Tensor& w = p.input(name);
    const Shape& s = w.shape();
    if (const std::optional<WeightCompression> c = weight_compression(p, name)) {
        // Compressed weights are NK (validate()); each row dequantised on its own.
        m.reshape_unfilled(c->N, c->K);
#pragma omp parallel for schedule(static) if (c->N * c->K > (1u << 20))
        for (long long r = 0; r < static_cast<long long>(c->N); ++r)
            dequantize_rows(p, name, *c, e, static_cast<std::size_t>(r), 1, m.row(static_cast<std::size_t>(r)));
        return;
    }
    const std::size_t n = layout == WeightLayout::NK ? s[1] : s[2];
    const std::size_t k = layout == WeightLayout::NK ? s[2] : s[1];
    m.reshape_unfilled(n, k);
    const std::size_t base = e * n * k;
    if (layout == WeightLayout::NK) {
        // Widening model-sized weights is a large share of a sparse run: rows in parallel.
#pragma omp parallel for schedule(static) if (n * k > (1u << 20))
        for (long long r = 0; r < static_cast<long long>(n); ++r)
            w.to_f64(base + static_cast<std::size_t>(r) * k, k, m.row(static_cast<std::size_t>(r)));
    } else {
        // One stored row (an input index kk, all n outputs) at a time, scattered into column kk.
        std::vector<double> src(n);
        for (std::size_t kk = 0; kk < k; ++kk) {
            w.to_f64(base + kk * n, n, src.data());
            for (std::size_t r = 0; r < n; ++r) m.row(r)[kk] = src[r];
        }
    }
}

std::vector<double> bias_row(const Problem& p, const char* name, std::size_t e, std::size_t n) {
    std::vector<double> b(n, 0.0);
    if (p.has(name)) p.input(name).to_f64(e * n, n, b.data());
    return b;
}

std::vector<double> dense_routing(const Problem& p, const Dims& d, RoutingLayout layout) {
    const Tensor& rw = p.input(kRoutingWeights);
    if (layout == RoutingLayout::dense) return rw.to_f64();  // [E, B, S, 1] == [E, T] row-major
    const Tensor& idx = p.input(kTopkIndices);
    std::vector<double> dense(d.E * d.T, 0.0);
    for (std::size_t t = 0; t < d.T; ++t)
        for (std::size_t k = 0; k < d.K; ++k)
            dense[static_cast<std::size_t>(idx.get_index(t * d.K + k)) * d.T + t] = rw.get(t * d.K + k);
    return dense;
}

std::vector<std::vector<RoutedPair>> pairs_by_expert(const Problem& p, const Dims& d) {
    const Tensor& idx = p.input(kTopkIndices);
    std::vector<std::vector<RoutedPair>> by_expert(d.E);
    for (std::size_t t = 0; t < d.T; ++t)
        for (std::size_t k = 0; k < d.K; ++k)
            by_expert[static_cast<std::size_t>(idx.get_index(t * d.K + k))].push_back({t, k});
    return by_expert;
}

PaddedMatrix gather_rows(const PaddedMatrix& x, const std::vector<RoutedPair>& pairs) {
    PaddedMatrix out;
    out.reshape_unfilled(pairs.size(), x.cols);  // every row copied whole, padding included
    for (std::size_t i = 0; i < pairs.size(); ++i)
        std::copy(x.row(pairs[i].token), x.row(pairs[i].token) + x.stride, out.row(i));
    return out;
}

}  // namespace moe::reference
