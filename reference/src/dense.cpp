// Dense mode: the op's formula step by step, in the order the seed text writes it.
//   x2 = reshape(hidden, [T, H]); tiled = reshape(tile(x2, [E, 1]), [E, T, H])
//   GEMM2: gate_up = tiled @ W0 + b0; act = (clamp(lin) + 1) * swish(min(gate)); down = act @ W1 + b1
//   GEMM3: act = swish(tiled @ W0) * (tiled @ W1); down = act @ W2
//   out = reduce_sum(reshape(down, [E, B, S, H]) * routing[E, B, S, 1], axis 0)
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xpad.hpp>
#include <xtensor/xview.hpp>

#include "expert_stages.hpp"
#include "modes.hpp"
#include "moe/reference/operands.hpp"
#include "moe/reference/scalar_math.hpp"
#include "moe/spec/error.hpp"

namespace moe::reference::detail {

namespace {

using Array = xt::xarray<double>;

// matmul(tiled[e], W[e]) for every expert: [E, T, N]. Uses the reference's one GEMM, so each
// element is the same dot product the sparse mode computes.
Array batched_matmul(const Array& lhs, const Problem& p, const char* w, WeightLayout layout, std::size_t n_out,
                     int threads) {
    const std::size_t E = lhs.shape()[0], T = lhs.shape()[1], K = lhs.shape()[2];
    Array out = xt::zeros<double>({E, T, n_out});
    PaddedMatrix weights;  // one expert's; the storage serves every expert
    for (std::size_t e = 0; e < E; ++e) {
        PaddedMatrix a(T, K);
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t k = 0; k < K; ++k) a.row(t)[k] = lhs(e, t, k);
        weight_rows_into(p, w, e, layout, weights);
        gemm_abt(a, weights, out.data() + e * T * n_out, n_out, threads);
    }
    return out;
}

// Bias [E, 1, N] broadcast over tokens (a zero tensor when the input is absent).
Array bias_tensor(const Problem& p, const char* name, std::size_t E, std::size_t N) {
    Array b = xt::zeros<double>({E, std::size_t(1), N});
    for (std::size_t e = 0; e < E; ++e) {
        const auto row = bias_row(p, name, e, N);
        std::copy(row.begin(), row.end(), b.data() + e * N);
    }
    return b;
}

template <class F>
Array map(Array a, F f) {
    for (auto& v : a) v = f(v);
    return a;
}

}  // namespace

Result run_dense(const Problem& p, const Dims& d, const ResolvedParams& rp, const Options& o) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const std::size_t n0 = d.first_gemm_width(p.attributes.expert_type);
    // The dense formula holds E copies of every intermediate; refuse what cannot fit.
    const double bytes = 8.0 * static_cast<double>(d.E) * static_cast<double>(d.T) *
                         static_cast<double>(n0 + 2 * d.I + 2 * d.H);
    if (bytes > 8e9)
        throw InputError("dense mode would hold about " + std::to_string(static_cast<long long>(bytes / 1e9)) +
                         " GB of intermediates (E x T x features); use the sparse mode for this case");

    const Tensor& hidden = p.input(kHiddenStates);
    const std::vector<double> x_values = hidden.to_f64();
    const Array x2 = xt::adapt(x_values, std::vector<std::size_t>{d.T, d.H});
    Array tiled = xt::tile(x2, {d.E, std::size_t(1)});
    tiled.reshape({d.E, d.T, d.H});

    Array first = batched_matmul(tiled, p, kWeight0, rp.weight_layout, n0, o.threads);
    Array act, up;
    if (gemm2) {
        const Array gate_up = first + bias_tensor(p, kBias0, d.E, n0);
        first = gate_up;
        const double L = rp.clamp_limit, beta = rp.swish_beta;
        const Array gate = xt::view(gate_up, xt::all(), xt::all(), xt::range(rp.gate_lane, n0, 2));
        const Array lin = xt::view(gate_up, xt::all(), xt::all(), xt::range(1 - rp.gate_lane, n0, 2));
        const Array swish_1 = map(map(gate, [&](double v) { return minimum(v, L); }),
                                  [&](double v) { return swish(v, beta); });
        const Array add_1 = map(lin, [&](double v) { return clamp(v, -L, L); }) + 1.0;
        act = add_1 * swish_1;
    } else {
        up = batched_matmul(tiled, p, kWeight1, rp.weight_layout, d.I, o.threads);
        const double beta = rp.swish_beta;
        act = map(first, [&](double v) { return swish(v, beta); }) * up;
    }
    Array down = batched_matmul(act, p, gemm2 ? kWeight1 : kWeight2, rp.weight_layout, d.H, o.threads);
    if (gemm2) down = down + bias_tensor(p, kBias1, d.E, d.H);

    // Routing multiply and the reduce-sum over experts, from +0 in expert order.
    const std::vector<double> w_values = dense_routing(p, d, rp.routing_layout);
    const Array routing = xt::adapt(w_values, std::vector<std::size_t>{d.E, d.T, 1});
    const Array routed = down * routing;
    Array out = xt::zeros<double>({d.T, d.H});
    for (std::size_t e = 0; e < d.E; ++e) out += xt::view(routed, e, xt::all(), xt::all());

    Result r;
    r.output = Tensor::from_f64(DType::f64, hidden.shape(), std::vector<double>(out.begin(), out.end()));
    if (o.stages) {
        // The intermediates of each (token, slot) are those of the expert the slot selects.
        StageCollector stages(true, d);
        const Tensor& idx = p.input(kTopkIndices);
        for (std::size_t t = 0; t < d.T; ++t) {
            for (std::size_t k = 0; k < d.K; ++k) {
                const auto e = static_cast<std::size_t>(idx.get_index(t * d.K + k));
                stages.put(gemm2 ? "gate_up" : "gate", n0, t, k, &first(e, t, 0));
                if (!gemm2) stages.put("up", d.I, t, k, &up(e, t, 0));
                stages.put("act", d.I, t, k, &act(e, t, 0));
                stages.put("down", d.H, t, k, &down(e, t, 0));
            }
        }
        r.stages = stages.take(stage_layout(p.attributes.expert_type, d));
    }
    return r;
}

}  // namespace moe::reference::detail
