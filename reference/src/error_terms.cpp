// The magnitudes of spec/tolerance.md, computed per expert like the sparse mode: the same routed
// pairs, absolute values of the operands, and the activation's local Lipschitz bounds.
#include "moe/reference/error_terms.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "expert_stages.hpp"
#include "moe/reference/operands.hpp"
#include "moe/reference/scalar_math.hpp"

namespace moe::reference {

namespace {

PaddedMatrix absolute(PaddedMatrix m) {
    for (double& v : m.data) v = std::fabs(v);
    return m;
}

// In place, for an expert's weights once their values have been used: no second copy of them.
void make_absolute(PaddedMatrix& m) {
    for (double& v : m.data) v = std::fabs(v);
}

std::vector<double> absolute(std::vector<double> v) {
    for (double& x : v) x = std::fabs(x);
    return v;
}

// rows x n product of `a` (rows of the padded matrix) with |W|^T, plus an optional |bias|.
std::vector<double> times_abs(const PaddedMatrix& a, const PaddedMatrix& abs_w, const std::vector<double>* abs_bias,
                              int threads) {
    std::vector<double> out(a.rows * abs_w.rows);
    gemm_abt(a, abs_w, out.data(), abs_w.rows, threads);
    if (abs_bias)
        for (std::size_t r = 0; r < a.rows; ++r)
            for (std::size_t j = 0; j < abs_w.rows; ++j) out[r * abs_w.rows + j] += (*abs_bias)[j];
    return out;
}

// What the activation carries forward of a first-GEMM value's error: its slope times the
// error's magnitude; nothing from an infinite value. A backend forms that infinity exactly in any
// precision (an infinite bias, weight or input makes it whatever the rounding of the finite
// terms; their overflow to the other sign is beyond the declared range), so what the activation
// makes of it (a clamp of +-inf, the gate's minimum with the limit) is exact too, where slope
// times an infinite magnitude would give a bound that passes any output.
double carried(double slope, double magnitude, double value) { return std::isinf(value) ? 0.0 : slope * magnitude; }

}  // namespace

ErrorTerms error_terms(const Problem& p, bool with_stages, int threads) {
    const Dims d = validate(p);
    const ResolvedParams rp = resolve(p.attributes);
    threads = std::max(1, threads);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const std::size_t n0 = d.first_gemm_width(p.attributes.expert_type);
    const double L = rp.clamp_limit, beta = rp.swish_beta;
    const PaddedMatrix x = hidden_rows(p, d);
    const auto routed = pairs_by_expert(p, d);
    const auto& names = error_term_names();
    // Per (token, slot): the down stage's six terms, each H wide.
    std::map<std::string, std::vector<double>> pair_terms;
    for (const auto& n : names) pair_terms[n].assign(d.T * d.K * d.H, 0.0);
    detail::StageCollector stages(with_stages, d);
    PaddedMatrix w0, w1, wd;  // one expert's weights (then their magnitudes); reused by every expert

    for (std::size_t e = 0; e < d.E; ++e) {
        const auto& pairs = routed[e];
        const std::size_t n = pairs.size();
        if (n == 0) continue;
        const PaddedMatrix xe = gather_rows(x, pairs);
        const PaddedMatrix abs_x = absolute(xe);

        // First GEMM(s): values h and magnitudes M1 = |W||x| + |b|.
        weight_rows_into(p, kWeight0, e, rp.weight_layout, w0);
        std::vector<double> h(n * n0);
        gemm_abt(xe, w0, h.data(), n0, threads);
        make_absolute(w0);  // |W0| from here on
        const std::vector<double> b0 = gemm2 ? bias_row(p, kBias0, e, n0) : std::vector<double>(n0, 0.0);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n0; ++j) h[i * n0 + j] += b0[j];
        const std::vector<double> abs_b0 = absolute(b0);
        const std::vector<double> m1 = times_abs(abs_x, w0, &abs_b0, threads);
        std::vector<double> up, m1_up;
        if (!gemm2) {
            weight_rows_into(p, kWeight1, e, rp.weight_layout, w1);
            up.resize(n * d.I);
            gemm_abt(xe, w1, up.data(), d.I, threads);
            make_absolute(w1);  // |W1| from here on
            m1_up = times_abs(abs_x, w1, nullptr, threads);
        }

        // Activation: values, and the four vectors that the down GEMM's |W| carries forward.
        PaddedMatrix act(n, d.I), v_first_acc(n, d.I), v_first_store(n, d.I), v_eval(n, d.I), v_abs(n, d.I);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < d.I; ++j) {
                double a, acc, store, gate_eff;
                if (gemm2) {
                    const std::size_t gi = i * n0 + 2 * j + rp.gate_lane, li = i * n0 + 2 * j + 1 - rp.gate_lane;
                    const double gate = minimum(h[gi], L), lin = clamp(h[li], -L, L);
                    a = gemm2_activation(h[gi], h[li], L, beta);
                    // d a / d lin <= |swish(gate)| (0 where clamped: the larger side is kept so that
                    // a flip across the edge is covered); d a / d gate <= 1.1 (|lin| + 1).
                    const double d_lin = std::fabs(swish(gate, beta));
                    const double d_gate = kSwishSlopeBound * (std::fabs(lin) + 1.0);
                    acc = carried(d_lin, m1[li], h[li]) + carried(d_gate, m1[gi], h[gi]);
                    store = carried(d_lin, std::fabs(h[li]), h[li]) + carried(d_gate, std::fabs(h[gi]), h[gi]);
                    gate_eff = gate;
                } else {
                    const std::size_t k = i * d.I + j;
                    a = gemm3_activation(h[k], up[k], beta);
                    const double d_gate = kSwishSlopeBound * std::fabs(up[k]);
                    const double d_up = std::fabs(swish(h[k], beta));
                    acc = carried(d_gate, m1[k], h[k]) + carried(d_up, m1_up[k], up[k]);
                    store = carried(d_gate, std::fabs(h[k]), h[k]) + carried(d_up, std::fabs(up[k]), up[k]);
                    gate_eff = h[k];
                }
                act.row(i)[j] = a;
                v_first_acc.row(i)[j] = acc;
                v_first_store.row(i)[j] = store;
                v_eval.row(i)[j] = (kActivationEvalUnits + std::fabs(beta * gate_eff)) * std::fabs(a);
                v_abs.row(i)[j] = std::fabs(a);
            }
        }

        // Down GEMM: values y, and every term carried by |W_down|.
        weight_rows_into(p, gemm2 ? kWeight1 : kWeight2, e, rp.weight_layout, wd);
        std::vector<double> y(n * d.H);
        gemm_abt(act, wd, y.data(), d.H, threads);
        make_absolute(wd);
        const PaddedMatrix& abs_wd = wd;
        const std::vector<double> bd = gemm2 ? bias_row(p, kBias1, e, d.H) : std::vector<double>(d.H, 0.0);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < d.H; ++j) y[i * d.H + j] += bd[j];
        const std::vector<double> abs_bd = absolute(bd);
        std::map<std::string, std::vector<double>> down;
        down["first_acc"] = times_abs(v_first_acc, abs_wd, nullptr, threads);
        down["first_store"] = times_abs(v_first_store, abs_wd, nullptr, threads);
        down["act_eval"] = times_abs(v_eval, abs_wd, nullptr, threads);
        down["act_store"] = times_abs(v_abs, abs_wd, nullptr, threads);
        down["down_acc"] = times_abs(v_abs, abs_wd, &abs_bd, threads);
        down["down_store"] = absolute(y);

        for (std::size_t i = 0; i < n; ++i) {
            const auto [t, k] = pairs[i];
            for (const auto& name : names)
                std::copy(down[name].begin() + static_cast<std::ptrdiff_t>(i * d.H),
                          down[name].begin() + static_cast<std::ptrdiff_t>((i + 1) * d.H),
                          pair_terms[name].begin() + static_cast<std::ptrdiff_t>((t * d.K + k) * d.H));
            if (!stages.enabled()) continue;
            const std::string first = gemm2 ? "gate_up" : "gate";
            stages.put(first + "/first_acc", n0, t, k, m1.data() + i * n0);
            std::vector<double> abs_h(h.begin() + static_cast<std::ptrdiff_t>(i * n0),
                                      h.begin() + static_cast<std::ptrdiff_t>((i + 1) * n0));
            stages.put(first + "/first_store", n0, t, k, absolute(abs_h).data());
            if (!gemm2) {
                stages.put("up/first_acc", d.I, t, k, m1_up.data() + i * d.I);
                std::vector<double> abs_up(up.begin() + static_cast<std::ptrdiff_t>(i * d.I),
                                           up.begin() + static_cast<std::ptrdiff_t>((i + 1) * d.I));
                stages.put("up/first_store", d.I, t, k, absolute(abs_up).data());
            }
            stages.put("act/first_acc", d.I, t, k, v_first_acc.row(i));
            stages.put("act/first_store", d.I, t, k, v_first_store.row(i));
            stages.put("act/act_eval", d.I, t, k, v_eval.row(i));
            stages.put("act/act_store", d.I, t, k, v_abs.row(i));
            for (const auto& name : names) stages.put("down/" + name, d.H, t, k, down[name].data() + i * d.H);
        }
    }

    // Output terms: sum over slots of |w| times the pair terms, experts in ascending order.
    const Tensor& idx = p.input(kTopkIndices);
    const std::vector<double> dense_w = dense_routing(p, d, rp.routing_layout);
    ErrorTerms out;
    for (const auto& name : names) {
        std::vector<double> acc(d.T * d.H, 0.0);
        const auto& src = pair_terms[name];
        for (std::size_t t = 0; t < d.T; ++t) {
            for (std::size_t k = 0; k < d.K; ++k) {
                const double w = std::fabs(dense_w[static_cast<std::size_t>(idx.get_index(t * d.K + k)) * d.T + t]);
                for (std::size_t hh = 0; hh < d.H; ++hh) acc[t * d.H + hh] += w * src[(t * d.K + k) * d.H + hh];
            }
        }
        out.output.emplace(name, Tensor::from_f64(DType::f64, p.input(kHiddenStates).shape(), acc));
    }
    if (with_stages) {
        std::vector<std::pair<std::string, std::size_t>> layout;
        const std::string first = gemm2 ? "gate_up" : "gate";
        for (const char* t : {"first_acc", "first_store"}) layout.emplace_back(first + "/" + t, n0);
        if (!gemm2)
            for (const char* t : {"first_acc", "first_store"}) layout.emplace_back(std::string("up/") + t, d.I);
        for (const char* t : {"first_acc", "first_store", "act_eval", "act_store"})
            layout.emplace_back(std::string("act/") + t, d.I);
        for (const auto& name : names) layout.emplace_back("down/" + name, d.H);
        out.stages = stages.take(layout);
    }
    return out;
}

}  // namespace moe::reference
