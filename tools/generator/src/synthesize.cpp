#include "moe/generator/synthesize.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/generator/compressed_synthesis.hpp"
#include "moe/generator/random_stream.hpp"
#include "moe/generator/routers.hpp"
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
        case Fill::Kind::log_uniform: {
            // Every binade in [min_exp, max_exp] equally likely: a large dynamic range.
            const int e = f.min_exp + static_cast<int>(rs.below(static_cast<std::uint64_t>(f.max_exp - f.min_exp) + 1));
            const double m = std::ldexp(1.0 + rs.uniform01(), e);
            return rs.below(2) ? -m : m;
        }
    }
    return 0.0;
}

Fill fill_for(const CaseSpec& c, const std::string& input) {
    auto it = c.fills.find(input);
    return it != c.fills.end() ? it->second : default_fill(c, input);
}

// The largest magnitude a fill draws: what a compressed weight's dequantised values aim at.
double fill_magnitude(const Fill& f) {
    switch (f.kind) {
        case Fill::Kind::uniform: case Fill::Kind::normal: return f.scale;
        case Fill::Kind::dyadic: return std::ldexp(static_cast<double>(f.range), -f.bits);
        case Fill::Kind::constant: return std::fabs(f.value);
        case Fill::Kind::log_uniform: return std::ldexp(2.0, f.max_exp);  // |m 2^e| < 2^(max_exp + 1)
    }
    return 1.0;
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

// m 2^e, m in [1, 2), e an integer in [lo, hi].
double binade_draw(RandomStream& rs, int lo, int hi) {
    const int e = lo + static_cast<int>(rs.below(static_cast<std::uint64_t>(hi - lo) + 1));
    return std::ldexp(1.0 + rs.uniform01(), e);
}

// `wide` weights, by token index mod 4: (0) each weight in [2^-20, 1) (about 1e-6 to 1), so the
// weights span six decades and do not sum to 1; (1) all in [2^-20, 2^-13) (about 1e-6 to 1e-4),
// so small routes carry the whole output; (2) all subnormal in the data type; (3) as (0) with
// one exact zero in a random slot.
std::vector<double> wide_weights(const CaseSpec& c, RandomStream& rs, std::size_t K, std::size_t token) {
    std::vector<double> w(K);
    const int min_normal = c.dtype == DType::f16 ? -14 : (c.dtype == DType::f64 ? -1022 : -126);
    for (auto& v : w) {
        switch (token % 4) {
            case 1: v = binade_draw(rs, -20, -14); break;
            case 2: v = binade_draw(rs, min_normal - 7, min_normal - 1); break;
            default: v = binade_draw(rs, -20, -1);
        }
    }
    if (token % 4 == 3 && K > 0) w[rs.below(K)] = 0.0;
    return w;
}

// Weights of one token's K slots.
std::vector<double> slot_weights(const CaseSpec& c, RandomStream& rs, std::size_t K, std::size_t token) {
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
        case RoutingSpec::Weights::wide: return wide_weights(c, rs, K, token);
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

Problem synthesize(const CaseSpec& c, SynthesisReport* report) {
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
    // A weight of n outputs and k inputs: in the data type, or compressed ([E, n, k]) with the
    // magnitude its fill asks for.
    auto weight = [&](const char* name, std::size_t n, std::size_t k) {
        if (c.compression && c.compression->compresses(name)) {
            if (!nk)
                throw InputError("case " + c.name + ": compressed weights are stored [E, N, K] (weight_layout NK), "
                                 "but this case's convention gives weight_layout KN");
            synthesize_compressed_weight(p, c, name, E, n, k, fill_magnitude(fill_for(c, name)));
        } else {
            p.inputs[name] = filled(c, name, weight_shape(n, k));
        }
    };
    if (gemm2) {
        weight(kWeight0, 2 * I, H);
        weight(kWeight1, H, I);
        if (c.bias_0) p.inputs[kBias0] = filled(c, kBias0, bias_shape(2 * I));
        if (c.bias_1) p.inputs[kBias1] = filled(c, kBias1, bias_shape(H));
    } else {
        weight(kWeight0, I, H);
        weight(kWeight1, I, H);
        weight(kWeight2, H, I);
    }

    // Routing: K distinct experts per token, `always` ones included, `exclude` ones never.
    // sel/wts hold the [T, K] (expert, weight) pairs; the shared expert, if any, sits in slot 0.
    const Shape idx_shape = c.indices_bsk ? Shape{c.batch, c.seq, K} : Shape{T, K};
    Tensor idx(c.index_dtype, idx_shape);
    Tensor compact(c.dtype, idx_shape);
    Tensor dense(c.dtype, c.rank3 ? Shape{E, c.batch, c.seq, 1} : Shape{E, T, 1});
    const RoutingSpec& rt = c.routing;
    const bool shared = rt.shared_expert.has_value();
    if (shared && (*rt.shared_expert >= E || K == 0))
        throw InputError("case " + c.name + ": routing.shared_expert needs an expert id < E and K >= 1");
    const std::size_t Kd = shared ? K - 1 : K;  // slots the scenario fills
    std::vector<std::size_t> sel(T * K);
    std::vector<double> wts(T * K);
    if (shared)
        for (std::size_t t = 0; t < T; ++t) sel[t * K] = *rt.shared_expert, wts[t * K] = 1.0;
    const std::size_t off = shared ? 1 : 0;
    if (rt.router != RouterKind::none) {
        // The router sees the experts other than the shared one, renumbered densely.
        const std::size_t Er = shared ? E - 1 : E;
        RandomStream lr(c.seed, "router_logits");
        std::vector<double> logits(T * Er);
        for (auto& v : logits) v = rt.logit_scale * lr.normal();
        RouterConfig cfg;
        cfg.kind = rt.router;
        cfg.topk = Kd;
        cfg.normalize = rt.normalize;
        cfg.n_group = rt.n_group;
        cfg.topk_group = rt.topk_group;
        if (rt.bias_scale > 0.0) {
            RandomStream br(c.seed, "router_bias");
            cfg.bias.resize(Er);
            for (auto& v : cfg.bias) v = br.uniform(-rt.bias_scale, rt.bias_scale);
        }
        if (Kd > 0) {
            RouterResult r;
            try {
                r = route(logits, T, Er, cfg);
            } catch (const InputError& e) {
                throw InputError("case " + c.name + ": " + e.what());
            }
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t k = 0; k < Kd; ++k) {
                    std::size_t e = r.indices[t * Kd + k];
                    if (shared && e >= *rt.shared_expert) ++e;
                    sel[t * K + off + k] = e;
                    wts[t * K + off + k] = r.weights[t * Kd + k];
                }
        }
    } else if (rt.balanced) {
        // Experts in a shuffled order laid over the T*K pairs of a shuffled token order: pair
        // number p*K + k (p-th token of that order, slot k) gets expert perm[(p*K + k) mod E].
        if (E == 0 || (T * K) % E != 0 || K > E)
            throw InputError("case " + c.name + ": routing.balanced needs E to divide T*K = " + std::to_string(T * K));
        RandomStream rs(c.seed, "routing");
        std::vector<std::size_t> perm(E), order(T);
        std::iota(perm.begin(), perm.end(), std::size_t{0});
        std::iota(order.begin(), order.end(), std::size_t{0});
        for (std::size_t i = E; i > 1; --i) std::swap(perm[i - 1], perm[rs.below(i)]);
        for (std::size_t i = T; i > 1; --i) std::swap(order[i - 1], order[rs.below(i)]);
        for (std::size_t q = 0; q < T; ++q)
            for (std::size_t k = 0; k < K; ++k) sel[order[q] * K + k] = perm[(q * K + k) % E];
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t k = K; k > 1; --k) std::swap(sel[t * K + k - 1], sel[t * K + rs.below(k)]);
            const std::vector<double> w = slot_weights(c, rs, K, t);
            for (std::size_t k = 0; k < K; ++k) wts[t * K + k] = w[k];
        }
    } else {
        std::vector<std::size_t> pool;
        for (std::size_t e = 0; e < E; ++e) {
            const bool out = std::count(rt.exclude.begin(), rt.exclude.end(), e) ||
                             std::count(rt.always.begin(), rt.always.end(), e) || (shared && e == *rt.shared_expert);
            if (!out) pool.push_back(e);
        }
        for (std::size_t e : rt.always)
            if (e >= E) throw InputError("case " + c.name + ": routing.always names expert " + std::to_string(e) + " >= E");
        if (rt.always.size() > Kd || pool.size() + rt.always.size() < Kd)
            throw InputError("case " + c.name + ": routing leaves " + std::to_string(pool.size()) +
                             " free experts and " + std::to_string(rt.always.size()) +
                             " fixed ones, which cannot fill top-k = " + std::to_string(Kd));
        RandomStream rs(c.seed, "routing");
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<std::size_t> chosen(rt.always);
            std::vector<std::size_t> candidates = pool;
            if (rt.skew > 0.0) {
                // Zipf: expert e weighs 1/(e+1)^s; draw without replacement.
                std::vector<double> weight(candidates.size());
                std::vector<char> taken(candidates.size(), 0);
                for (std::size_t i = 0; i < candidates.size(); ++i)
                    weight[i] = std::pow(static_cast<double>(candidates[i] + 1), -rt.skew);
                while (chosen.size() < Kd) {
                    double total = 0.0;
                    for (double v : weight) total += v;
                    std::size_t i = 0;
                    if (total > 0.0) {
                        double u = rs.uniform01() * total;
                        while (i + 1 < weight.size() && (u >= weight[i] || weight[i] == 0.0)) {
                            u -= weight[i];
                            ++i;
                        }
                        // Rounding ran off the end: the last expert of positive weight (total > 0
                        // says there is one before it).
                        while (weight[i] == 0.0) --i;
                    } else {
                        // Every weight left is 0: an exponent so large (1e308, inf) that 1/(e+1)^s
                        // underflows past the first experts. The distribution's limit: the
                        // lowest-numbered expert still free (the pool is in ascending order).
                        while (taken[i]) ++i;
                    }
                    chosen.push_back(candidates[i]);
                    weight[i] = 0.0;
                    taken[i] = 1;
                }
            } else {
                for (std::size_t i = 0; chosen.size() < Kd; ++i) {  // partial Fisher-Yates
                    std::swap(candidates[i], candidates[i + rs.below(candidates.size() - i)]);
                    chosen.push_back(candidates[i]);
                }
            }
            for (std::size_t k = Kd; k > 1; --k) std::swap(chosen[k - 1], chosen[rs.below(k)]);
            const std::vector<double> w = slot_weights(c, rs, Kd, t);
            for (std::size_t k = 0; k < Kd; ++k) {
                sel[t * K + off + k] = chosen[k];
                wts[t * K + off + k] = w[k];
            }
        }
    }
    if (rt.capacity_factor > 0.0) {
        // Each expert keeps its first ceil(c*T*K/E) pairs in ascending token order; the rest keep
        // their index but get weight 0. The shared expert is exempt.
        const auto cap = static_cast<std::size_t>(std::ceil(rt.capacity_factor * static_cast<double>(T * K) /
                                                            static_cast<double>(E)));
        std::vector<std::size_t> load(E, 0);
        std::size_t dropped = 0;
        for (std::size_t i = 0; i < T * K; ++i) {
            if (shared && i % K == 0) continue;
            if (load[sel[i]] >= cap) {
                wts[i] = 0.0;
                ++dropped;
            } else {
                ++load[sel[i]];
            }
        }
        if (report) report->dropped_pairs = dropped;
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t k = 0; k < K; ++k) {
            idx.set_index(t * K + k, static_cast<std::int64_t>(sel[t * K + k]));
            compact.set(t * K + k, wts[t * K + k]);
            dense.set(sel[t * K + k] * T + t, wts[t * K + k]);
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
        if (is_index_type(it->second.dtype()) && std::trunc(o.value) != o.value)
            throw InputError("case " + c.name + ": override of " + o.input + " needs an integer value");
        try {
            it->second.set(flat, o.value);
        } catch (const InputError& e) {  // a compressed input's range
            throw InputError("case " + c.name + ": override of " + o.input + ": " + e.what());
        }
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
