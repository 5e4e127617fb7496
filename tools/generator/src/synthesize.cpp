#include "moe/generator/synthesize.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/generator/random_stream.hpp"
#include "moe/reference/scalar_math.hpp"
#include "moe/spec/error.hpp"

namespace moe::generator {

namespace {

double draw(const Fill& f, RandomStream& rs) {
    switch (f.kind) {
        case Fill::Kind::uniform: return rs.uniform(-f.scale, f.scale);
        case Fill::Kind::normal: return f.scale * rs.normal();
        case Fill::Kind::dyadic:
            return std::ldexp(static_cast<double>(static_cast<std::int64_t>(rs.below(2 * f.range + 1)) - f.range),
                              -f.bits);
        case Fill::Kind::constant: return f.value;
    }
    return 0.0;
}

Fill fill_for(const CaseSpec& c, const std::string& input) {
    auto it = c.fills.find(input);
    return it != c.fills.end() ? it->second : default_fill(c, input);
}

Tensor filled(const CaseSpec& c, const std::string& input, Shape shape) {
    Tensor t(c.dtype, std::move(shape));
    const Fill f = fill_for(c, input);
    RandomStream rs(c.seed, input);
    std::vector<double> block(1 << 16);
    for (std::size_t begin = 0; begin < t.size(); begin += block.size()) {
        const std::size_t n = std::min(block.size(), t.size() - begin);
        for (std::size_t i = 0; i < n; ++i) block[i] = draw(f, rs);
        t.set_range(begin, n, block.data());
    }
    return t;
}

// Weights of one token's K slots.
std::vector<double> slot_weights(const CaseSpec& c, RandomStream& rs) {
    const std::size_t K = c.topk;
    std::vector<double> w(K);
    switch (c.routing.weights) {
        case RoutingSpec::Weights::softmax: {
            for (auto& v : w) v = reference::exp_portable(rs.uniform(-2.0, 2.0));
            const double sum = std::accumulate(w.begin(), w.end(), 0.0);
            for (auto& v : w) v /= sum;
            break;
        }
        case RoutingSpec::Weights::random: {
            for (auto& v : w) v = rs.uniform(0.1, 1.0);
            const double sum = std::accumulate(w.begin(), w.end(), 0.0);
            for (auto& v : w) v /= sum;
            break;
        }
        case RoutingSpec::Weights::dyadic: {
            // 1/2, 1/4, ..., 2^-(K-1), 2^-(K-1): powers of two summing to 1, in shuffled slots.
            for (std::size_t k = 0; k < K; ++k) w[k] = std::ldexp(1.0, -static_cast<int>(std::min(k + 1, K - 1)));
            if (K == 1) w[0] = 1.0;
            for (std::size_t k = K; k > 1; --k) std::swap(w[k - 1], w[rs.below(k)]);
            break;
        }
    }
    return w;
}

}  // namespace

Problem synthesize(const CaseSpec& c) {
    Problem p;
    p.name = c.name;
    p.attributes = c.attributes;
    const ResolvedParams rp = resolve(c.attributes);
    const bool gemm2 = c.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const bool nk = rp.weight_layout == WeightLayout::NK;
    const std::size_t T = c.tokens(), H = c.hidden, I = c.inter, E = c.experts, K = c.topk;
    auto weight_shape = [&](std::size_t n, std::size_t k) { return nk ? Shape{E, n, k} : Shape{E, k, n}; };
    auto bias_shape = [&](std::size_t n) { return c.bias_rank2 ? Shape{E, n} : Shape{E, 1, n}; };

    p.inputs[kHiddenStates] = filled(c, kHiddenStates, c.rank3 ? Shape{c.batch, c.seq, H} : Shape{T, H});
    if (gemm2) {
        p.inputs[kWeight0] = filled(c, kWeight0, weight_shape(2 * I, H));
        p.inputs[kWeight1] = filled(c, kWeight1, weight_shape(H, I));
        if (c.bias_0) p.inputs[kBias0] = filled(c, kBias0, bias_shape(2 * I));
        if (c.bias_1) p.inputs[kBias1] = filled(c, kBias1, bias_shape(H));
    } else {
        p.inputs[kWeight0] = filled(c, kWeight0, weight_shape(I, H));
        p.inputs[kWeight1] = filled(c, kWeight1, weight_shape(I, H));
        p.inputs[kWeight2] = filled(c, kWeight2, weight_shape(H, I));
    }

    // Routing: K distinct experts per token, `always` ones included, `exclude` ones never.
    const Shape idx_shape = c.indices_bsk ? Shape{c.batch, c.seq, K} : Shape{T, K};
    Tensor idx(c.index_dtype, idx_shape);
    Tensor compact(c.dtype, idx_shape);
    Tensor dense(c.dtype, c.rank3 ? Shape{E, c.batch, c.seq, 1} : Shape{E, T, 1});
    std::vector<std::size_t> pool;
    for (std::size_t e = 0; e < E; ++e) {
        const bool out = std::count(c.routing.exclude.begin(), c.routing.exclude.end(), e) ||
                         std::count(c.routing.always.begin(), c.routing.always.end(), e);
        if (!out) pool.push_back(e);
    }
    for (std::size_t e : c.routing.always)
        if (e >= E) throw InputError("case " + c.name + ": routing.always names expert " + std::to_string(e) + " >= E");
    if (c.routing.always.size() > K || pool.size() + c.routing.always.size() < K)
        throw InputError("case " + c.name + ": routing leaves " + std::to_string(pool.size()) +
                         " free experts and " + std::to_string(c.routing.always.size()) +
                         " fixed ones, which cannot fill top-k = " + std::to_string(K));
    RandomStream rs(c.seed, "routing");
    for (std::size_t t = 0; t < T; ++t) {
        std::vector<std::size_t> chosen(c.routing.always);
        std::vector<std::size_t> candidates = pool;
        if (c.routing.skew > 0.0) {
            // Zipf: expert e weighs 1/(e+1)^s; draw without replacement.
            std::vector<double> weight(candidates.size());
            for (std::size_t i = 0; i < candidates.size(); ++i)
                weight[i] = std::pow(static_cast<double>(candidates[i] + 1), -c.routing.skew);
            while (chosen.size() < K) {
                double total = 0.0;
                for (double v : weight) total += v;
                double u = rs.uniform01() * total;
                std::size_t i = 0;
                while (i + 1 < weight.size() && (u >= weight[i] || weight[i] == 0.0)) {
                    u -= weight[i];
                    ++i;
                }
                if (weight[i] == 0.0)  // rounding ran off the end: take the last expert still free
                    while (weight[i] == 0.0) --i;
                chosen.push_back(candidates[i]);
                weight[i] = 0.0;
            }
        } else {
            for (std::size_t i = 0; chosen.size() < K; ++i) {  // partial Fisher-Yates
                std::swap(candidates[i], candidates[i + rs.below(candidates.size() - i)]);
                chosen.push_back(candidates[i]);
            }
        }
        for (std::size_t k = K; k > 1; --k) std::swap(chosen[k - 1], chosen[rs.below(k)]);
        const std::vector<double> w = slot_weights(c, rs);
        for (std::size_t k = 0; k < K; ++k) {
            idx.set_index(t * K + k, static_cast<std::int64_t>(chosen[k]));
            compact.set(t * K + k, w[k]);
            dense.set(chosen[k] * T + t, w[k]);
        }
    }
    p.inputs[kTopkIndices] = std::move(idx);
    p.inputs[kRoutingWeights] = rp.routing_layout == RoutingLayout::compact ? std::move(compact) : std::move(dense);

    for (const auto& o : c.overrides) {
        auto it = p.inputs.find(o.input);
        if (it == p.inputs.end()) throw InputError("case " + c.name + ": override names absent input " + o.input);
        const Shape& s = it->second.shape();
        if (o.index.size() != s.size())
            throw InputError("case " + c.name + ": override index for " + o.input + " has rank " +
                             std::to_string(o.index.size()) + ", the input has shape " + shape_to_string(s));
        std::size_t flat = 0;
        for (std::size_t d = 0; d < s.size(); ++d) {
            if (o.index[d] >= s[d])
                throw InputError("case " + c.name + ": override index " + shape_to_string(o.index) + " is outside " +
                                 o.input + " of shape " + shape_to_string(s));
            flat = flat * s[d] + o.index[d];
        }
        if (!is_floating(it->second.dtype()) && std::trunc(o.value) != o.value)
            throw InputError("case " + c.name + ": override of " + o.input + " needs an integer value");
        it->second.set(flat, o.value);
    }
    return p;
}

void redraw_token(Problem& p, const CaseSpec& c, std::size_t token, int attempt) {
    Tensor& x = p.inputs.at(kHiddenStates);
    const Fill f = fill_for(c, kHiddenStates);
    RandomStream rs(c.seed, "hidden_states/redraw/" + std::to_string(token) + "/" + std::to_string(attempt));
    for (std::size_t h = 0; h < c.hidden; ++h) x.set(token * c.hidden + h, draw(f, rs));
    // The case's own values for this row survive the redraw.
    for (const auto& o : c.overrides) {
        if (o.input != kHiddenStates) continue;
        std::size_t flat = 0;
        for (std::size_t d = 0; d < o.index.size(); ++d) flat = flat * x.shape()[d] + o.index[d];
        if (flat / c.hidden == token) x.set(flat, o.value);
    }
}

}  // namespace moe::generator
