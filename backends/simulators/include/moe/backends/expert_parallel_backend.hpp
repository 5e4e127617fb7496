#pragma once
// `expert_parallel`: a simulator of an expert-parallel execution plan (Tenstorrent's Qwen3 MoE kernel plan).
// D devices each hold a set of experts (by default uniform and contiguous: device d holds experts
// [d*E/D, (d+1)*E/D); when D >= E, expert d, devices beyond E none). The hidden states are replicated; the routing
// is given to every device as num_routed_tokens[E], routed_tokens[E, T] (padded with -1) and
// routed_token_weights[E, T] (padded with 0). Each device runs, for each local expert, the first
// GEMM(s) and the activation on the expert's routed tokens (a batched matmul over its local
// experts into a T_d x I buffer), then the down GEMM, multiplies by the routed weight and
// ACCUMULATES into its own T x H partial output. The output is the sum of the D partials, added in
// device order (the all-reduce). A tensor-parallel variant splits every expert along I instead:
// device d holds columns [d*I/D, (d+1)*I/D) of every expert, computes every pair on its slice, and
// the partial down sums are reduced the same way (bias_1 added once, by device 0).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends {

enum class ExpertParallelMutation {
    none,
    overwrite,  // a device writes its expert outputs instead of accumulating them (in its partial
                // output and when its partial output is reduced into the final output)
    leftover_experts_dropped,  // the uniform split gives each device E / D experts (the seed's
                               // 128 / 8 = 16) and no device the E % D left over
};

struct ExpertParallelOptions {
    std::size_t devices = 8;
    // Custom device-expert mapping: mapping[d] = the global experts device d holds. Empty: uniform
    // contiguous. A custom mapping must have `devices` entries and hold every expert exactly once.
    std::vector<std::vector<std::size_t>> mapping;
    bool tensor_parallel = false;  // the TP variant: weights split along I across the devices
    ExpertParallelMutation mutation = ExpertParallelMutation::none;
};

// Device d holds experts [d*E/D, (d+1)*E/D) (integer division); when D >= E, device d < E holds
// expert d and the devices beyond E hold none.
std::vector<std::vector<std::size_t>> uniform_expert_mapping(std::size_t experts, std::size_t devices);

// The routing tensors of the Tenstorrent plan.
struct RoutedTokens {
    std::size_t experts = 0, tokens = 0;
    std::vector<std::int32_t> num_routed_tokens;  // [E] T_e
    std::vector<std::int32_t> routed_tokens;      // [E, T] token ids, -1 beyond T_e
    std::vector<float> routed_token_weights;      // [E, T] routing weights, 0 beyond T_e
};
// From the routing plan and each pair's routing weight (weight(token, slot, expert)).
template <class WeightFn>
RoutedTokens make_routed_tokens(const RoutingPlan& plan, WeightFn weight) {
    RoutedTokens r;
    r.experts = plan.experts;
    r.tokens = plan.tokens;
    r.num_routed_tokens.assign(plan.experts, 0);
    r.routed_tokens.assign(plan.experts * plan.tokens, -1);
    r.routed_token_weights.assign(plan.experts * plan.tokens, 0.0f);
    for (std::size_t e = 0; e < plan.experts; ++e) {
        r.num_routed_tokens[e] = static_cast<std::int32_t>(plan.counts[e]);
        for (std::size_t i = 0; i < plan.counts[e]; ++i) {
            const std::size_t pair = plan.offsets[e] + i;
            r.routed_tokens[e * plan.tokens + i] = static_cast<std::int32_t>(plan.token[pair]);
            r.routed_token_weights[e * plan.tokens + i] = weight(plan.token[pair], plan.slot[pair], e);
        }
    }
    return r;
}

struct ExpertParallelStats {
    std::size_t devices = 0, experts = 0, tokens = 0, topk = 0, hidden = 0, inter = 0, bytes_per_element = 0;
    std::vector<std::vector<std::size_t>> mapping;  // [D] experts per device
    std::vector<std::size_t> device_pairs;          // [D] T_d: token-expert pairs routed to device d
    std::vector<std::size_t> device_tokens;         // [D] distinct tokens with a pair on device d
    std::size_t max_pairs = 0;
    double mean_pairs = 0;  // T * K / D
    double imbalance = 0;   // max_pairs / mean_pairs (1.0: perfectly balanced; 1.0 when T * K = 0)
    // Communication, in bytes (b = bytes_per_element). Tokens start sequence-sharded: token t's
    // home device is floor(t * D / T).
    //   all-gather dispatch:   every device gathers the tokens it lacks: (D - 1) * T * H * b
    //   all-to-all-v dispatch: token t goes once to each device other than its home that holds one
    //                          of its experts: sum_t |{d != home(t) : d holds an expert of t}| * H * b
    //   all-to-all-v combine:  the same count of H-vectors (partial outputs) comes back
    //   reduce-scatter combine (after the all-gather): (D - 1) * T * H * b (ring)
    //   all-reduce of the T x H output (replicated-input EP as simulated, and TP): 2 * (D - 1) * T * H * b (ring)
    std::uint64_t allgather_bytes = 0;
    std::uint64_t reduce_scatter_bytes = 0;
    std::uint64_t alltoallv_dispatch_bytes = 0;
    std::uint64_t alltoallv_combine_bytes = 0;
    std::uint64_t allreduce_bytes = 0;
    std::size_t alltoallv_sends = 0;  // (token, remote device) pairs
    // EP vs TP per device: FLOPs (6 * H * I per pair: 2 * H * 2I + 2 * I * H for GEMM2, three
    // 2 * H * I GEMMs for GEMM3) and expert weight elements (3 * H * I per expert).
    std::uint64_t ep_max_device_flops = 0;   // max_d T_d * 6 * H * I
    std::uint64_t tp_max_device_flops = 0;   // T * K * 6 * H * ceil(I / D)
    std::uint64_t ep_max_device_weight_bytes = 0;  // max_d |experts of d| * 3 * H * I * b
    std::uint64_t tp_max_device_weight_bytes = 0;  // E * 3 * H * ceil(I / D) * b

    std::string to_text() const;
};

// Pure: from the top-k indices ([T * K], row-major), the sizes and a mapping (empty: uniform).
ExpertParallelStats expert_parallel_stats(const std::vector<std::int64_t>& topk_indices, std::size_t tokens,
                                          std::size_t topk, std::size_t experts, std::size_t hidden,
                                          std::size_t inter, std::size_t devices,
                                          const std::vector<std::vector<std::size_t>>& mapping,
                                          std::size_t bytes_per_element);

class ExpertParallelBackend : public Backend {
public:
    explicit ExpertParallelBackend(ExpertParallelOptions options = {});
    std::string name() const override;  // expert_parallel, expert_parallel_tp, or mutant:expert_parallel_<mutation>
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    Output run(const Problem& p, bool want_stages) override;
    const ExpertParallelStats& stats() const { return stats_; }        // of the last run
    const RoutedTokens& routed_tokens() const { return routed_; }     // of the last run

private:
    ExpertParallelOptions options_;
    ExpertParallelStats stats_;
    RoutedTokens routed_;
};

// The expert_parallel mutants (every ExpertParallelMutation but none).
std::vector<Mutant> expert_parallel_mutants();

}  // namespace moe::backends
