#include "moe/generator/routers.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "moe/reference/scalar_math.hpp"
#include "moe/spec/error.hpp"

namespace moe::generator {

const char* router_name(RouterKind k) {
    switch (k) {
        case RouterKind::none: return "none";
        case RouterKind::softmax_topk: return "softmax_topk";
        case RouterKind::topk_softmax: return "topk_softmax";
        case RouterKind::sigmoid_bias: return "sigmoid_bias";
        case RouterKind::group_limited: return "group_limited";
    }
    return "?";
}

std::optional<RouterKind> parse_router(std::string_view n) {
    for (auto k : {RouterKind::none, RouterKind::softmax_topk, RouterKind::topk_softmax, RouterKind::sigmoid_bias,
                   RouterKind::group_limited})
        if (n == router_name(k)) return k;
    return std::nullopt;
}

double sigmoid_portable(double x) { return 1.0 / (1.0 + reference::exp_portable(-x)); }

std::vector<std::size_t> top_k(const std::vector<double>& score, std::vector<std::size_t> candidates, std::size_t k) {
    if (k > candidates.size()) throw InputError("top-k: k = " + std::to_string(k) + " exceeds the " +
                                                std::to_string(candidates.size()) + " candidates");
    auto better = [&](std::size_t a, std::size_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); };
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k), candidates.end(), better);
    candidates.resize(k);
    return candidates;
}

RouterResult route(const std::vector<double>& logits, std::size_t T, std::size_t E, const RouterConfig& cfg) {
    const std::size_t K = cfg.topk;
    if (cfg.kind == RouterKind::none) throw InputError("route(): router none has no front-end");
    if (logits.size() != T * E) throw InputError("route(): logits hold " + std::to_string(logits.size()) +
                                                 " values, expected T*E = " + std::to_string(T * E));
    if (K == 0 || K > E) throw InputError("route(): top-k must be in [1, E]");
    if (!cfg.bias.empty() && cfg.bias.size() != E) throw InputError("route(): bias must have E entries");
    if (cfg.kind == RouterKind::softmax_topk && !cfg.bias.empty())
        throw InputError("route(): softmax_topk takes no bias");
    for (double v : logits)
        if (std::isnan(v)) throw InputError("route(): NaN logit");
    for (double v : cfg.bias)
        if (std::isnan(v)) throw InputError("route(): NaN bias");
    std::size_t group_size = E;
    if (cfg.kind == RouterKind::group_limited) {
        if (cfg.n_group == 0 || E % cfg.n_group != 0)
            throw InputError("route(): n_group = " + std::to_string(cfg.n_group) + " does not divide E = " + std::to_string(E));
        if (cfg.topk_group == 0 || cfg.topk_group > cfg.n_group)
            throw InputError("route(): topk_group must be in [1, n_group]");
        group_size = E / cfg.n_group;
        if (cfg.topk_group * group_size < K)
            throw InputError("route(): topk_group groups of " + std::to_string(group_size) +
                             " experts cannot fill top-k = " + std::to_string(K));
    }
    auto bias = [&](std::size_t e) { return cfg.bias.empty() ? 0.0 : cfg.bias[e]; };

    RouterResult r;
    r.tokens = T;
    r.topk = K;
    r.indices.resize(T * K);
    r.weights.resize(T * K);
    std::vector<std::size_t> all(E);
    std::iota(all.begin(), all.end(), std::size_t{0});
    std::vector<double> select(E), value(E);
    for (std::size_t t = 0; t < T; ++t) {
        const double* z = logits.data() + t * E;
        std::vector<std::size_t> chosen;
        switch (cfg.kind) {
            case RouterKind::softmax_topk: {
                const double m = *std::max_element(z, z + E);
                double sum = 0.0;
                for (std::size_t e = 0; e < E; ++e) sum += value[e] = reference::exp_portable(z[e] - m);
                for (std::size_t e = 0; e < E; ++e) select[e] = value[e] /= sum;
                chosen = top_k(select, all, K);
                break;
            }
            case RouterKind::topk_softmax: {
                for (std::size_t e = 0; e < E; ++e) select[e] = z[e] + bias(e);
                chosen = top_k(select, all, K);
                const double m = select[chosen[0]];
                for (std::size_t e : chosen) value[e] = reference::exp_portable(select[e] - m);
                break;
            }
            case RouterKind::sigmoid_bias:
            case RouterKind::group_limited: {
                for (std::size_t e = 0; e < E; ++e) {
                    value[e] = sigmoid_portable(z[e]);
                    select[e] = value[e] + bias(e);
                }
                std::vector<std::size_t> candidates = all;
                if (cfg.kind == RouterKind::group_limited) {
                    std::vector<double> gscore(cfg.n_group);
                    std::vector<std::size_t> groups(cfg.n_group);
                    for (std::size_t g = 0; g < cfg.n_group; ++g) {
                        groups[g] = g;
                        std::vector<std::size_t> members(group_size);
                        std::iota(members.begin(), members.end(), g * group_size);
                        const auto best = top_k(select, members, std::min<std::size_t>(2, group_size));
                        gscore[g] = 0.0;
                        for (std::size_t e : best) gscore[g] += select[e];
                    }
                    const auto kept = top_k(gscore, groups, cfg.topk_group);
                    candidates.clear();
                    for (std::size_t e = 0; e < E; ++e)
                        if (std::count(kept.begin(), kept.end(), e / group_size)) candidates.push_back(e);
                }
                chosen = top_k(select, candidates, K);
                break;
            }
            case RouterKind::none: break;
        }
        // Weights of the chosen slots.
        const bool always_normalize = cfg.kind == RouterKind::topk_softmax;
        double sum = 0.0;
        for (std::size_t e : chosen) sum += value[e];
        const bool sig = cfg.kind == RouterKind::sigmoid_bias || cfg.kind == RouterKind::group_limited;
        for (std::size_t k = 0; k < K; ++k) {
            const std::size_t e = chosen[k];
            double w = value[e];
            if (always_normalize || cfg.normalize) w = sig ? w / (sum + cfg.eps) : w / sum;
            r.indices[t * K + k] = e;
            r.weights[t * K + k] = w;
        }
    }
    return r;
}

}  // namespace moe::generator
