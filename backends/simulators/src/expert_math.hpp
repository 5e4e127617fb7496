#pragma once
// The per-row expert math of the strategy simulators (blockwise, expert_parallel), in f32 like
// loop_f32 (backends/simulators/src/loop_backend.cpp), split into pieces that a simulated core or device can
// compute on a slice of the work: the first GEMM over a range of hidden inputs and a range of
// intermediate features (no bias), the activation (bias_0 added first), and the down GEMM over a
// range of intermediate inputs and a range of hidden outputs (no bias). Full rows are the pieces
// over the whole ranges. Sums run in f32 in index order.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "moe/spec/compression.hpp"
#include "moe/spec/problem.hpp"

namespace moe::backends::strategies {

struct ExpertMath {
    Dims d;
    bool gemm2 = true;
    float beta = 1.0f, limit = 0.0f;
    int gate_lane = 0;
    bool nk = true;
    bool compact_routing = true;
    std::vector<float> x, routing, w0, w1, w2, b0, b1;  // b0/b1 empty when absent (always for GEMM3)

    // f64 inputs rounded to f32, the narrower types exactly. Through f64 a piece at a time: a
    // whole f64 copy of a model-sized weight is gigabytes.
    static std::vector<float> widen(const Tensor& t) {
        std::vector<float> out(t.size());
        double chunk[4096];
        for (std::size_t i = 0; i < out.size(); i += 4096) {
            const std::size_t n = std::min<std::size_t>(4096, out.size() - i);
            t.to_f64(i, n, chunk);
            for (std::size_t j = 0; j < n; ++j) out[i + j] = static_cast<float>(chunk[j]);
        }
        return out;
    }

    // A weight as floats; a compressed one dequantised exactly and rounded once to f32 (the
    // compute type, which the precision declares as the dequantisation type), a row at a time.
    static std::vector<float> weight_floats(const Problem& p, const char* name) {
        const Tensor& t = p.input(name);
        if (!is_compressed_weight(t.dtype())) return widen(t);
        const WeightCompression c = *weight_compression(p, name);
        std::vector<float> out(c.E * c.N * c.K);
        std::vector<double> row(c.K);
        for (std::size_t r = 0; r < c.E * c.N; ++r) {
            dequantize_rows(p, name, c, r / c.N, r % c.N, 1, row.data());
            for (std::size_t k = 0; k < c.K; ++k) out[r * c.K + k] = static_cast<float>(row[k]);
        }
        return out;
    }

    static ExpertMath load(const Problem& p) {
        ExpertMath m;
        m.d = validate(p);
        const ResolvedParams rp = resolve(p.attributes);
        m.gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
        m.beta = static_cast<float>(rp.swish_beta);
        m.limit = static_cast<float>(rp.clamp_limit);
        m.gate_lane = rp.gate_lane;
        m.nk = rp.weight_layout == WeightLayout::NK;
        m.compact_routing = rp.routing_layout == RoutingLayout::compact;
        m.x = widen(p.input(kHiddenStates));
        m.routing = widen(p.input(kRoutingWeights));
        m.w0 = weight_floats(p, kWeight0);
        m.w1 = weight_floats(p, kWeight1);
        if (!m.gemm2) m.w2 = weight_floats(p, kWeight2);
        if (m.gemm2 && p.has(kBias0)) m.b0 = widen(p.input(kBias0));
        if (m.gemm2 && p.has(kBias1)) m.b1 = widen(p.input(kBias1));
        return m;
    }

    // Element (output n, input k) of expert e's matrix of `rows` outputs by `cols` inputs.
    float weight(const std::vector<float>& w, std::size_t e, std::size_t rows, std::size_t cols, std::size_t n,
                 std::size_t k) const {
        const float* we = w.data() + e * rows * cols;
        return nk ? we[n * cols + k] : we[k * rows + n];
    }

    // Routing weight of (token t, slot k) whose expert is e, in either routing layout.
    float routing_weight(std::size_t t, std::size_t k, std::size_t e) const {
        return compact_routing ? routing[t * d.K + k] : routing[e * d.T + t];
    }

    // First GEMM, no bias: for j in [j0, j1), gate[j - j0] and lin[j - j0] (GEMM2: the gate and
    // linear lanes of gate_up; GEMM3: gate and up) summed over hidden inputs k in [k0, k1).
    void first_partial(std::size_t e, const float* in, std::size_t k0, std::size_t k1, std::size_t j0, std::size_t j1,
                       float* gate, float* lin) const {
        for (std::size_t j = j0; j < j1; ++j) {
            float g = 0.0f, l = 0.0f;
            if (gemm2) {
                const std::size_t ng = 2 * j + static_cast<std::size_t>(gate_lane);
                const std::size_t nl = 2 * j + 1 - static_cast<std::size_t>(gate_lane);
                for (std::size_t k = k0; k < k1; ++k) {
                    g += weight(w0, e, 2 * d.I, d.H, ng, k) * in[k];
                    l += weight(w0, e, 2 * d.I, d.H, nl, k) * in[k];
                }
            } else {
                for (std::size_t k = k0; k < k1; ++k) {
                    g += weight(w0, e, d.I, d.H, j, k) * in[k];
                    l += weight(w1, e, d.I, d.H, j, k) * in[k];
                }
            }
            gate[j - j0] = g;
            lin[j - j0] = l;
        }
    }

    // bias_0 (GEMM2) added to the complete first-GEMM sums, then the activation: act[j - j0].
    void activate(std::size_t e, std::size_t j0, std::size_t j1, const float* gate, const float* lin, float* act) const {
        for (std::size_t j = j0; j < j1; ++j) {
            float g = gate[j - j0], l = lin[j - j0];
            if (gemm2) {
                if (!b0.empty()) {
                    g += b0[e * 2 * d.I + 2 * j + static_cast<std::size_t>(gate_lane)];
                    l += b0[e * 2 * d.I + 2 * j + 1 - static_cast<std::size_t>(gate_lane)];
                }
                const float clamped = l < -limit ? -limit : (l > limit ? limit : l);
                const float capped = g > limit ? limit : g;
                act[j - j0] = (clamped + 1.0f) * swish(capped);
            } else {
                act[j - j0] = swish(g) * l;
            }
        }
    }

    // Down GEMM, no bias: out[h - h0] = sum over j in [j0, j1) of W_down[h, j] * act[j - j0].
    void down_partial(std::size_t e, const float* act, std::size_t j0, std::size_t j1, std::size_t h0, std::size_t h1,
                      float* out) const {
        const std::vector<float>& w = gemm2 ? w1 : w2;
        for (std::size_t h = h0; h < h1; ++h) {
            float sum = 0.0f;
            for (std::size_t j = j0; j < j1; ++j) sum += weight(w, e, d.H, d.I, h, j) * act[j - j0];
            out[h - h0] = sum;
        }
    }

    // bias_1 (GEMM2), added once after every partial sum of the down GEMM is in.
    float down_bias(std::size_t e, std::size_t h) const { return b1.empty() ? 0.0f : b1[e * d.H + h]; }

    // One expert on one row, everything on one core: down[H], bias_1 included, no routing weight.
    std::vector<float> row(std::size_t e, const float* in) const {
        std::vector<float> gate(d.I), lin(d.I), act(d.I), down(d.H);
        first_partial(e, in, 0, d.H, 0, d.I, gate.data(), lin.data());
        activate(e, 0, d.I, gate.data(), lin.data(), act.data());
        down_partial(e, act.data(), 0, d.I, 0, d.H, down.data());
        for (std::size_t h = 0; h < d.H; ++h) down[h] += down_bias(e, h);
        return down;
    }

private:
    float swish(float v) const { return v / (1.0f + std::exp(-beta * v)); }
};

}  // namespace moe::backends::strategies
