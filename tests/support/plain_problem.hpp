#pragma once
// Small valid problems built with the spec library alone, for the tests of spec/ and reference/,
// which link nothing above their layer (the generator, in tools/, sits above both). Values come
// from a fixed linear congruential sequence: uniform in [-1, 1), the weights scaled by
// 1/sqrt(fan-in); each token selects K distinct experts (never one of `exclude`) with positive
// weights summing to 1; shapes and layouts are the ones the convention resolves to.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::test {

struct PlainShape {
    std::size_t T = 5, H = 12, I = 6, E = 4, K = 2;
    DType dtype = DType::f32;
    std::size_t batch = 0;              // > 0: hidden states [batch, T / batch, H]
    bool indices_bsk = false;           // with batch: indices (and compact routing) [B, S, K]
    std::vector<std::size_t> exclude;   // experts no token selects
};

class PlainStream {
public:
    explicit PlainStream(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
    std::uint64_t next() {
        s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
        return s_ >> 11;  // 53 bits
    }
    double uniform() { return static_cast<double>(next()) * 0x1p-52 - 1.0; }  // [-1, 1)
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

private:
    std::uint64_t s_;
};

inline Tensor plain_tensor(DType dtype, Shape shape, PlainStream& rs, double scale) {
    Tensor t(dtype, std::move(shape));
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, scale * rs.uniform());
    return t;
}

inline Problem plain_problem(ExpertType type, Convention conv, const PlainShape& s) {
    const std::size_t T = s.T, H = s.H, I = s.I, E = s.E, K = s.K;
    Problem p;
    p.name = "plain";
    p.attributes = attributes_for(type, conv, 1.702, 0.9);
    const ResolvedParams rp = resolve(p.attributes);
    const bool nk = rp.weight_layout == WeightLayout::NK;
    auto weight_shape = [&](std::size_t n, std::size_t k) { return nk ? Shape{E, n, k} : Shape{E, k, n}; };
    PlainStream rs(T * 1000003 + H * 1009 + I * 101 + E * 11 + K);
    const bool rank3 = s.batch > 0;
    const std::size_t S = rank3 ? T / s.batch : T;
    p.inputs[kHiddenStates] = plain_tensor(s.dtype, rank3 ? Shape{s.batch, S, H} : Shape{T, H}, rs, 1.0);
    const double in_scale = 1.0 / std::sqrt(static_cast<double>(H)), down_scale = 1.0 / std::sqrt(static_cast<double>(I));
    if (type == ExpertType::gemm2_bias_swiglu_clamp) {
        p.inputs[kWeight0] = plain_tensor(s.dtype, weight_shape(2 * I, H), rs, in_scale);
        p.inputs[kBias0] = plain_tensor(s.dtype, {E, 1, 2 * I}, rs, 0.5);
        p.inputs[kWeight1] = plain_tensor(s.dtype, weight_shape(H, I), rs, down_scale);
        p.inputs[kBias1] = plain_tensor(s.dtype, {E, 1, H}, rs, 0.5);
    } else {
        p.inputs[kWeight0] = plain_tensor(s.dtype, weight_shape(I, H), rs, in_scale);
        p.inputs[kWeight1] = plain_tensor(s.dtype, weight_shape(I, H), rs, in_scale);
        p.inputs[kWeight2] = plain_tensor(s.dtype, weight_shape(H, I), rs, down_scale);
    }
    const Shape idx_shape = rank3 && s.indices_bsk ? Shape{s.batch, S, K} : Shape{T, K};
    Tensor idx(DType::i32, idx_shape);
    Tensor compact(s.dtype, idx_shape);
    Tensor dense(s.dtype, rank3 ? Shape{E, s.batch, S, 1} : Shape{E, T, 1});
    std::vector<std::size_t> pool;
    for (std::size_t e = 0; e < E; ++e) {
        bool excluded = false;
        for (std::size_t x : s.exclude) excluded = excluded || x == e;
        if (!excluded) pool.push_back(e);
    }
    for (std::size_t t = 0; t < T; ++t) {
        std::vector<std::size_t> free = pool;
        std::vector<double> w(K);
        double sum = 0.0;
        for (std::size_t k = 0; k < K; ++k) sum += w[k] = 0.1 + 0.45 * (rs.uniform() + 1.0);
        for (std::size_t k = 0; k < K; ++k) {
            const std::size_t pick = rs.below(free.size());
            const std::size_t e = free[pick];
            free.erase(free.begin() + static_cast<std::ptrdiff_t>(pick));
            idx.set_index(t * K + k, static_cast<std::int64_t>(e));
            compact.set(t * K + k, w[k] / sum);
            dense.set(e * T + t, w[k] / sum);
        }
    }
    p.inputs[kTopkIndices] = std::move(idx);
    p.inputs[kRoutingWeights] = rp.routing_layout == RoutingLayout::compact ? std::move(compact) : std::move(dense);
    return p;
}

inline Problem plain_problem(ExpertType type, Convention conv, std::size_t T = 5, std::size_t H = 12,
                             std::size_t I = 6, std::size_t E = 4, std::size_t K = 2, DType dtype = DType::f32) {
    PlainShape s;
    s.T = T;
    s.H = H;
    s.I = I;
    s.E = E;
    s.K = K;
    s.dtype = dtype;
    return plain_problem(type, conv, s);
}

}  // namespace moe::test
