// Sparse mode: each expert runs on the tokens that selected it, then every token sums its K
// weighted expert outputs in ascending expert order.
#include <algorithm>
#include <numeric>

#include "expert_stages.hpp"
#include "modes.hpp"
#include "moe/reference/operands.hpp"
#include "moe/reference/scalar_math.hpp"
#include "moe/spec/dtype.hpp"

namespace moe::reference::detail {

namespace {

void add_bias(std::vector<double>& rows, std::size_t n_rows, const std::vector<double>& bias) {
    const std::size_t n = bias.size();
    for (std::size_t r = 0; r < n_rows; ++r)
        for (std::size_t j = 0; j < n; ++j) rows[r * n + j] += bias[j];
}

// Options::rounded_stages: stage `bit` (its index in stage_names()) kept in o.storage.
void keep_in_storage(const Options& o, unsigned bit, double* v, std::size_t n) {
    if (!(o.rounded_stages >> bit & 1u)) return;
    for (std::size_t i = 0; i < n; ++i) v[i] = round_to(o.storage, v[i]);
}

}  // namespace

Result run_sparse(const Problem& p, const Dims& d, const ResolvedParams& rp, const Options& o) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const std::size_t n0 = d.first_gemm_width(p.attributes.expert_type);
    const char* down_name = gemm2 ? kWeight1 : kWeight2;
    const PaddedMatrix x = hidden_rows(p, d);
    const auto routed = pairs_by_expert(p, d);
    std::vector<double> expert_out(d.T * d.K * d.H, 0.0);  // down output of each (token, slot)
    StageCollector stages(o.stages, d);
    PaddedMatrix w_first, w_up, w_down;  // one expert's weights; the storage serves every expert

    for (std::size_t e = 0; e < d.E; ++e) {
        const auto& pairs = routed[e];
        const std::size_t n = pairs.size();
        if (n == 0) continue;
        const PaddedMatrix xe = gather_rows(x, pairs);

        std::vector<double> first(n * n0);
        weight_rows_into(p, kWeight0, e, rp.weight_layout, w_first);
        gemm_abt(xe, w_first, first.data(), n0, o.threads);
        if (gemm2) add_bias(first, n, bias_row(p, kBias0, e, n0));
        keep_in_storage(o, 0, first.data(), first.size());  // gate_up or gate
        std::vector<double> up;
        if (!gemm2) {
            up.resize(n * d.I);
            weight_rows_into(p, kWeight1, e, rp.weight_layout, w_up);
            gemm_abt(xe, w_up, up.data(), d.I, o.threads);
            keep_in_storage(o, 1, up.data(), up.size());
        }

        PaddedMatrix act(n, d.I);
        for (std::size_t i = 0; i < n; ++i) {
            const double* f = first.data() + i * n0;
            double* a = act.row(i);
            for (std::size_t j = 0; j < d.I; ++j) {
                a[j] = gemm2 ? gemm2_activation(f[2 * j + rp.gate_lane], f[2 * j + 1 - rp.gate_lane], rp.clamp_limit,
                                                rp.swish_beta)
                             : gemm3_activation(f[j], up[i * d.I + j], rp.swish_beta);
            }
            keep_in_storage(o, gemm2 ? 1 : 2, a, d.I);
        }

        std::vector<double> down(n * d.H);
        weight_rows_into(p, down_name, e, rp.weight_layout, w_down);
        gemm_abt(act, w_down, down.data(), d.H, o.threads);
        if (gemm2) add_bias(down, n, bias_row(p, kBias1, e, d.H));
        keep_in_storage(o, gemm2 ? 2 : 3, down.data(), down.size());

        for (std::size_t i = 0; i < n; ++i) {
            const auto [t, k] = pairs[i];
            std::copy(down.begin() + static_cast<std::ptrdiff_t>(i * d.H),
                      down.begin() + static_cast<std::ptrdiff_t>((i + 1) * d.H),
                      expert_out.begin() + static_cast<std::ptrdiff_t>((t * d.K + k) * d.H));
            if (!stages.enabled()) continue;
            stages.put(gemm2 ? "gate_up" : "gate", n0, t, k, first.data() + i * n0);
            if (!gemm2) stages.put("up", d.I, t, k, up.data() + i * d.I);
            stages.put("act", d.I, t, k, act.row(i));
            stages.put("down", d.H, t, k, down.data() + i * d.H);
        }
    }

    // Weighted sum per token, experts in ascending id order (the dense mode's reduce order).
    const Tensor& idx = p.input(kTopkIndices);
    const std::vector<double> dense_w = dense_routing(p, d, rp.routing_layout);
    std::vector<double> out(d.T * d.H, 0.0);
    std::vector<std::size_t> slots(d.K);
    for (std::size_t t = 0; t < d.T; ++t) {
        std::iota(slots.begin(), slots.end(), 0);
        std::sort(slots.begin(), slots.end(),
                  [&](std::size_t a, std::size_t b) { return idx.get_index(t * d.K + a) < idx.get_index(t * d.K + b); });
        double* o_row = out.data() + t * d.H;
        for (std::size_t k : slots) {
            const double w = dense_w[static_cast<std::size_t>(idx.get_index(t * d.K + k)) * d.T + t];
            const double* y = expert_out.data() + (t * d.K + k) * d.H;
            for (std::size_t h = 0; h < d.H; ++h) o_row[h] += w * y[h];
        }
    }

    Result r;
    r.output = Tensor::from_f64(DType::f64, p.input(kHiddenStates).shape(), out);
    r.stages = stages.take(stage_layout(p.attributes.expert_type, d));
    return r;
}

}  // namespace moe::reference::detail
