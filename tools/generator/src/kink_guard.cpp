#include "moe/generator/kink_guard.hpp"

#include <cmath>
#include <set>
#include <vector>

#include "moe/generator/synthesize.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/compression.hpp"

namespace moe::generator {

namespace {

// The same problem with every data value replaced by its absolute value, in f64: its gate_up stage
// is the magnitude |W0||x| + |b0| of each pre-activation. Compressed weights enter as |W_f|, their
// dequantised values (the codes' magnitudes would mean nothing).
Problem absolute(const Problem& p) {
    Problem a = with_dequantized_weights(p, DType::f64);
    std::vector<double> block(1 << 16);
    for (auto& [name, t] : a.inputs) {
        if (name == kTopkIndices) continue;
        Tensor wide(DType::f64, t.shape());
        for (std::size_t begin = 0; begin < t.size(); begin += block.size()) {
            const std::size_t n = std::min(block.size(), t.size() - begin);
            t.to_f64(begin, n, block.data());
            for (std::size_t i = 0; i < n; ++i) block[i] = std::fabs(block[i]);
            wide.set_range(begin, n, block.data());
        }
        t = std::move(wide);
    }
    return a;
}

}  // namespace

KinkReport keep_off_kinks(Problem& p, const CaseSpec& c, int threads, int max_attempts) {
    KinkReport report;
    if (c.attributes.expert_type != ExpertType::gemm2_bias_swiglu_clamp) return report;
    const ResolvedParams rp = resolve(c.attributes);
    const double L = rp.clamp_limit;
    if (!std::isfinite(L)) return report;
    const double rounding = kKinkRoundingUnits * unit_roundoff(c.dtype) * L;
    const double accumulation = kKinkAccumulationLambda * std::sqrt(static_cast<double>(c.hidden)) * unit_roundoff(DType::f32);
    const reference::Options opts{reference::Mode::sparse, true, threads};

    for (int attempt = 1;; ++attempt) {
        const auto values = reference::run(p, opts).stages.at("gate_up");
        const auto magnitudes = reference::run(absolute(p), opts).stages.at("gate_up");
        const std::size_t T = values.shape()[0], K = values.shape()[1], I = values.shape()[2] / 2;
        std::set<std::size_t> tokens;
        std::size_t near = 0;
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t k = 0; k < K; ++k) {
                for (std::size_t j = 0; j < I; ++j) {
                    const std::size_t base = (t * K + k) * 2 * I;
                    const std::size_t g = base + 2 * j + rp.gate_lane, l = base + 2 * j + 1 - rp.gate_lane;
                    const double gate = values.get(g), lin = values.get(l);
                    const double mg = rounding + accumulation * magnitudes.get(g);
                    const double ml = rounding + accumulation * magnitudes.get(l);
                    if (std::fabs(gate - L) < mg || std::fabs(lin - L) < ml || std::fabs(lin + L) < ml) {
                        tokens.insert(t);
                        ++near;
                    }
                }
            }
        }
        if (tokens.empty()) return report;
        // When most tokens sit near an edge (large H: many lanes per token), drawing again cannot
        // clear them; the comparison's Lipschitz bound covers such lanes (spec/tolerance.md).
        if (attempt > max_attempts || (attempt > 2 && 2 * tokens.size() > T)) {
            report.near_lanes = near;
            return report;
        }
        for (std::size_t t : tokens) redraw_token(p, c, t, attempt);
        report.redraws += tokens.size();
    }
}

}  // namespace moe::generator
