// expert_parallel: the Tenstorrent expert-parallel plan on D simulated devices (and its TP variant).
#include "moe/backends/expert_parallel_backend.hpp"

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>

#include "expert_math.hpp"
#include "moe/backends/mutation_table.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends {

namespace {

constexpr MutationEntry<ExpertParallelMutation> kExpertParallelMutations[] = {
    {ExpertParallelMutation::overwrite, "expert_parallel_overwrite",
     "a device writes its expert outputs into the output instead of accumulating them"},
    {ExpertParallelMutation::leftover_experts_dropped, "expert_parallel_leftover_experts_dropped",
     "the uniform split gives each of the D devices E / D experts, so the E % D left over run nowhere"},
};

}  // namespace

std::vector<Mutant> expert_parallel_mutants() {
    return mutants_from_table<ExpertParallelMutation>(
        kExpertParallelMutations, "expert_parallel", [](ExpertParallelMutation m) -> std::unique_ptr<Backend> {
            ExpertParallelOptions o;
            o.mutation = m;
            return std::make_unique<ExpertParallelBackend>(o);
        });
}

std::vector<std::vector<std::size_t>> uniform_expert_mapping(std::size_t experts, std::size_t devices) {
    std::vector<std::vector<std::size_t>> m(devices);
    if (devices >= experts) {  // one expert each for the first E devices, none for the others
        for (std::size_t e = 0; e < experts; ++e) m[e].push_back(e);
        return m;
    }
    for (std::size_t d = 0; d < devices; ++d)
        for (std::size_t e = d * experts / devices; e < (d + 1) * experts / devices; ++e) m[d].push_back(e);
    return m;
}

namespace {

// The mapping to use (uniform when none is given), checked: `devices` entries, every expert once.
std::vector<std::vector<std::size_t>> checked_mapping(const std::vector<std::vector<std::size_t>>& given,
                                                      std::size_t experts, std::size_t devices) {
    if (devices == 0) throw InputError("expert_parallel: at least one device is needed");
    if (given.empty()) return uniform_expert_mapping(experts, devices);
    if (given.size() != devices)
        throw InputError("expert_parallel: the mapping has " + std::to_string(given.size()) + " devices, not " +
                         std::to_string(devices));
    std::vector<int> seen(experts, 0);
    for (const auto& list : given)
        for (std::size_t e : list) {
            if (e >= experts)
                throw InputError("expert_parallel: the mapping names expert " + std::to_string(e) + " of " +
                                 std::to_string(experts));
            ++seen[e];
        }
    for (std::size_t e = 0; e < experts; ++e)
        if (seen[e] != 1)
            throw InputError("expert_parallel: expert " + std::to_string(e) + " is held by " + std::to_string(seen[e]) +
                             " devices (must be exactly 1)");
    return given;
}

std::size_t home_device(std::size_t t, std::size_t tokens, std::size_t devices) {
    return tokens ? t * devices / tokens : 0;
}

}  // namespace

ExpertParallelStats expert_parallel_stats(const std::vector<std::int64_t>& idx, std::size_t T, std::size_t K,
                                          std::size_t E, std::size_t H, std::size_t I, std::size_t D,
                                          const std::vector<std::vector<std::size_t>>& mapping, std::size_t b) {
    if (idx.size() != T * K) throw InputError("expert_parallel_stats: indices are not T * K");
    ExpertParallelStats s;
    s.devices = D;
    s.experts = E;
    s.tokens = T;
    s.topk = K;
    s.hidden = H;
    s.inter = I;
    s.bytes_per_element = b;
    s.mapping = checked_mapping(mapping, E, D);
    std::vector<std::size_t> device_of(E, 0);
    for (std::size_t d = 0; d < D; ++d)
        for (std::size_t e : s.mapping[d]) device_of[e] = d;
    s.device_pairs.assign(D, 0);
    s.device_tokens.assign(D, 0);
    for (std::size_t t = 0; t < T; ++t) {
        std::set<std::size_t> devs;
        for (std::size_t k = 0; k < K; ++k) {
            const auto e = static_cast<std::size_t>(idx[t * K + k]);
            if (e >= E) throw InputError("expert_parallel_stats: expert index out of range");
            ++s.device_pairs[device_of[e]];
            devs.insert(device_of[e]);
        }
        for (std::size_t d : devs) {
            ++s.device_tokens[d];
            if (d != home_device(t, T, D)) ++s.alltoallv_sends;
        }
    }
    s.max_pairs = *std::max_element(s.device_pairs.begin(), s.device_pairs.end());
    s.mean_pairs = static_cast<double>(T * K) / static_cast<double>(D);
    s.imbalance = T * K != 0 ? static_cast<double>(s.max_pairs) / s.mean_pairs : 1.0;
    const std::uint64_t row = static_cast<std::uint64_t>(H) * b;
    s.allgather_bytes = static_cast<std::uint64_t>(D - 1) * T * row;
    s.reduce_scatter_bytes = static_cast<std::uint64_t>(D - 1) * T * row;
    s.alltoallv_dispatch_bytes = static_cast<std::uint64_t>(s.alltoallv_sends) * row;
    s.alltoallv_combine_bytes = s.alltoallv_dispatch_bytes;
    s.allreduce_bytes = 2 * static_cast<std::uint64_t>(D - 1) * T * row;
    const std::uint64_t slice = (I + D - 1) / D;
    std::size_t max_experts = 0;
    for (const auto& list : s.mapping) max_experts = std::max(max_experts, list.size());
    s.ep_max_device_flops = static_cast<std::uint64_t>(s.max_pairs) * 6 * H * I;
    s.tp_max_device_flops = static_cast<std::uint64_t>(T) * K * 6 * H * slice;
    s.ep_max_device_weight_bytes = static_cast<std::uint64_t>(max_experts) * 3 * H * I * b;
    s.tp_max_device_weight_bytes = static_cast<std::uint64_t>(E) * 3 * H * slice * b;
    return s;
}

std::string ExpertParallelStats::to_text() const {
    std::ostringstream o;
    o << "expert_parallel: D " << devices << ", E " << experts << ", T " << tokens << ", K " << topk << ", H " << hidden
      << ", I " << inter << ", " << bytes_per_element << " bytes/element\n";
    o << "  T_d:";
    for (std::size_t v : device_pairs) o << " " << v;
    o << "\n  tokens per device:";
    for (std::size_t v : device_tokens) o << " " << v;
    o << std::fixed << std::setprecision(3);
    o << "\n  max T_d " << max_pairs << ", mean " << mean_pairs << ", imbalance (max/mean) " << imbalance << "\n";
    o << "  dispatch: all-gather " << allgather_bytes << " B ((D-1)*T*H*b), all-to-all-v " << alltoallv_dispatch_bytes
      << " B (" << alltoallv_sends << " remote (token, device) sends * H*b)\n";
    o << "  combine: reduce-scatter " << reduce_scatter_bytes << " B, all-to-all-v " << alltoallv_combine_bytes
      << " B, all-reduce " << allreduce_bytes << " B (2*(D-1)*T*H*b)\n";
    o << "  per device, EP vs TP: FLOPs " << ep_max_device_flops << " vs " << tp_max_device_flops
      << ", expert weight bytes " << ep_max_device_weight_bytes << " vs " << tp_max_device_weight_bytes << "\n";
    return o.str();
}

ExpertParallelBackend::ExpertParallelBackend(ExpertParallelOptions options) : options_(std::move(options)) {}

std::string ExpertParallelBackend::name() const {
    return mutant_or_plain_name(kExpertParallelMutations, options_.mutation,
                                options_.tensor_parallel ? "expert_parallel_tp" : "expert_parallel");
}

std::string ExpertParallelBackend::description() const {
    if (const auto* m = find_mutation(kExpertParallelMutations, options_.mutation)) return m->description;
    std::ostringstream o;
    if (options_.tensor_parallel)
        o << "tensor-parallel simulator: every expert split along I across " << options_.devices
          << " devices, partial sums all-reduced in device order, f32";
    else
        o << "expert-parallel simulator (Tenstorrent's Qwen3 MoE plan): " << options_.devices << " devices, "
          << (options_.mapping.empty() ? "uniform contiguous" : "custom") << " expert mapping, per-device "
          << "accumulation, all-reduce in device order, f32";
    return o.str();
}

Support ExpertParallelBackend::supports(const Problem&) const {
    if (options_.devices == 0) return {false, "0 devices"};
    return {};
}

Precision ExpertParallelBackend::precision(DType) const { return {}; }  // compute f32, storage f32

Output ExpertParallelBackend::run(const Problem& p, bool) {
    const strategies::ExpertMath m = strategies::ExpertMath::load(p);
    const Dims& d = m.d;
    const std::size_t D = options_.devices;
    const Tensor& idx = p.input(kTopkIndices);
    const RoutingPlan plan = make_routing_plan(idx, d.E);
    routed_ = make_routed_tokens(plan, [&](std::size_t t, std::size_t k, std::size_t e) { return m.routing_weight(t, k, e); });
    std::vector<std::int64_t> flat(idx.size());
    for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = idx.get_index(i);
    const Tensor& hidden = p.input(kHiddenStates);
    stats_ = expert_parallel_stats(flat, d.T, d.K, d.E, d.H, d.I, D, options_.mapping, dtype_size(hidden.dtype()));
    std::vector<std::vector<std::size_t>> mapping = stats_.mapping;
    if (options_.mutation == ExpertParallelMutation::leftover_experts_dropped && options_.mapping.empty() && d.E > D)
        for (std::size_t dev = 0; dev < D; ++dev) {
            mapping[dev].clear();
            for (std::size_t e = dev * (d.E / D); e < (dev + 1) * (d.E / D); ++e) mapping[dev].push_back(e);
        }
    const bool overwrite = options_.mutation == ExpertParallelMutation::overwrite;

    std::vector<float> out(d.T * d.H, 0.0f), partial(d.T * d.H);
    std::vector<char> touched(d.T);
    std::vector<float> down(d.H);
    // Adds (or, mutated, writes) w * y into the device's partial row of token t.
    auto deposit = [&](std::size_t t, float w, const float* y) {
        float* row = partial.data() + t * d.H;
        for (std::size_t h = 0; h < d.H; ++h) row[h] = overwrite ? w * y[h] : row[h] + w * y[h];
        touched[t] = 1;
    };

    for (std::size_t dev = 0; dev < D; ++dev) {
        std::fill(partial.begin(), partial.end(), 0.0f);
        std::fill(touched.begin(), touched.end(), 0);
        if (!options_.tensor_parallel) {
            // The device's local experts in mapping order; steps 1-3 (gate/up and the activation)
            // for all of them into the T_d x I buffer, then step 4 (down, weight, accumulate).
            const auto& local = mapping[dev];
            std::size_t Td = 0;
            for (std::size_t e : local) Td += static_cast<std::size_t>(routed_.num_routed_tokens[e]);
            std::vector<float> act(Td * d.I), gate(d.I), lin(d.I);
            std::size_t at = 0;
            for (std::size_t e : local)
                for (std::int32_t i = 0; i < routed_.num_routed_tokens[e]; ++i, ++at) {
                    const auto t = static_cast<std::size_t>(routed_.routed_tokens[e * d.T + static_cast<std::size_t>(i)]);
                    m.first_partial(e, m.x.data() + t * d.H, 0, d.H, 0, d.I, gate.data(), lin.data());
                    m.activate(e, 0, d.I, gate.data(), lin.data(), act.data() + at * d.I);
                }
            at = 0;
            for (std::size_t e : local)
                for (std::int32_t i = 0; i < routed_.num_routed_tokens[e]; ++i, ++at) {
                    const std::size_t slot = e * d.T + static_cast<std::size_t>(i);
                    const auto t = static_cast<std::size_t>(routed_.routed_tokens[slot]);
                    m.down_partial(e, act.data() + at * d.I, 0, d.I, 0, d.H, down.data());
                    for (std::size_t h = 0; h < d.H; ++h) down[h] += m.down_bias(e, h);
                    deposit(t, routed_.routed_token_weights[slot], down.data());
                }
        } else {
            // TP: the device's I slice of every expert, for every pair; bias_1 on device 0 only.
            const std::size_t j0 = dev * d.I / D, j1 = (dev + 1) * d.I / D;
            std::vector<float> gate(j1 - j0), lin(j1 - j0), act(j1 - j0);
            for (std::size_t e = 0; e < d.E; ++e)
                for (std::int32_t i = 0; i < routed_.num_routed_tokens[e]; ++i) {
                    const std::size_t slot = e * d.T + static_cast<std::size_t>(i);
                    const auto t = static_cast<std::size_t>(routed_.routed_tokens[slot]);
                    m.first_partial(e, m.x.data() + t * d.H, 0, d.H, j0, j1, gate.data(), lin.data());
                    m.activate(e, j0, j1, gate.data(), lin.data(), act.data());
                    m.down_partial(e, act.data(), j0, j1, 0, d.H, down.data());
                    if (dev == 0)
                        for (std::size_t h = 0; h < d.H; ++h) down[h] += m.down_bias(e, h);
                    deposit(t, routed_.routed_token_weights[slot], down.data());
                }
        }
        // The all-reduce, in device order (the mutant writes the rows it touched).
        for (std::size_t t = 0; t < d.T; ++t) {
            if (!touched[t]) continue;
            float* o = out.data() + t * d.H;
            const float* q = partial.data() + t * d.H;
            for (std::size_t h = 0; h < d.H; ++h) o[h] = overwrite ? q[h] : o[h] + q[h];
        }
    }

    Output result;
    result.output = Tensor::from_f64(hidden.dtype(), hidden.shape(), std::vector<double>(out.begin(), out.end()));
    return result;
}

}  // namespace moe::backends
