#include "moe/backends/routing_plan.hpp"

namespace moe::backends {

RoutingPlan make_routing_plan(const Tensor& indices, std::size_t experts) {
    RoutingPlan p;
    p.experts = experts;
    p.topk = indices.shape().back();
    p.tokens = p.topk ? indices.size() / p.topk : 0;
    const std::size_t pairs = p.tokens * p.topk;
    p.counts.assign(experts, 0);
    for (std::size_t i = 0; i < pairs; ++i) ++p.counts[static_cast<std::size_t>(indices.get_index(i))];
    p.offsets.assign(experts + 1, 0);
    for (std::size_t e = 0; e < experts; ++e) {
        p.offsets[e + 1] = p.offsets[e] + p.counts[e];
        if (p.counts[e]) p.used.push_back(e);
    }
    // A counting sort over (token, slot) in row-major order is stable: inside an expert, pairs
    // keep ascending token order.
    p.token.resize(pairs);
    p.slot.resize(pairs);
    p.position.resize(pairs);
    std::vector<std::size_t> next(p.offsets.begin(), p.offsets.end() - 1);
    for (std::size_t i = 0; i < pairs; ++i) {
        const auto e = static_cast<std::size_t>(indices.get_index(i));
        const std::size_t at = next[e]++;
        p.token[at] = static_cast<std::uint32_t>(i / p.topk);
        p.slot[at] = static_cast<std::uint32_t>(i % p.topk);
        p.position[i] = at;
    }
    return p;
}

}  // namespace moe::backends
