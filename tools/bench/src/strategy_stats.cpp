#include "moe/bench/strategy_stats.hpp"

#include <set>
#include <string>

#include "moe/backends/blockwise_backend.hpp"
#include "moe/backends/expert_parallel_backend.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/error.hpp"

namespace moe::bench {

namespace {

// --strategy-stats: the execution-strategy simulators' statistics and the decode loading choice,
// from the routing alone (no data, nothing timed). The indices depend only on (seed, T, E, K,
// routing), not on H or I, so the problem is synthesised with H = I = 1.
std::vector<std::int64_t> routing_indices(const Shape& s, std::size_t T, const std::string& routing) {
    auto c = spec_for(s, T, DType::f32, routing);
    c.hidden = c.inter = 1;
    const moe::Problem p = generator::synthesize(c);
    const auto& idx = p.input(kTopkIndices);
    std::vector<std::int64_t> v(idx.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = idx.get_index(i);
    return v;
}

// One expert's weight bytes (weights and biases) at `bytes` per element.
double expert_weight_bytes(const Shape& s, std::size_t bytes) {
    const double H = double(s.hidden), I = double(s.inter);
    const double elements = s.type == ExpertType::gemm2_bias_swiglu_clamp ? 2 * I * H + H * I + 2 * I + H : 3 * H * I;
    return elements * double(bytes);
}

}  // namespace

void print_strategy_stats(std::FILE* out, const std::vector<Shape>& shapes, const std::vector<std::size_t>& tokens,
                          const StrategyOptions& o) {
    if (o.block_size == 0 || o.devices == 0) throw InputError("--block-size and --devices must be >= 1");
    if (!(o.alpha > 0)) throw InputError("--alpha must be > 0");
    if (!is_floating(o.dtype))
        throw InputError("--dtype " + std::string(dtype_name(o.dtype)) + ": expected a float type (f32, f16, bf16, f64)");
    const DType dtype = o.dtype;
    const double alpha = o.alpha;
    const std::size_t block_size = o.block_size, devices = o.devices;
    const std::size_t b = dtype_size(dtype);
    const std::vector<std::string> routings = {"uniform", "skewed"};
    std::fprintf(out, "moe-bench --strategy-stats: routing only, nothing timed; %s weights (%zu bytes per element)\n",
                std::string(dtype_name(dtype)).c_str(), b);
    std::fprintf(out, "\nblockwise (Neuron BWMM), block_size %zu, token/weight/block skipping on, one core\n", block_size);
    std::fprintf(out, "%-14s %5s %-8s %7s %7s %6s %8s %8s %8s %8s %8s %8s\n", "shape", "T", "routing", "blocks", "used",
                "cores", "pad_ovh%", "alg_pad%", "tot_pad%", "tok_lds", "w_loads", "AI_used");
    for (const auto& s : shapes)
        for (std::size_t T : tokens)
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, T, r);
                std::vector<std::size_t> counts(s.experts, 0);
                for (auto e : idx) ++counts[static_cast<std::size_t>(e)];
                backends::BlockwiseOptions o;
                o.block_size = block_size;
                const auto st = backends::blockwise_stats(backends::plan_blocks(counts, block_size, s.experts), o);
                std::fprintf(out, "%-14s %5zu %-8s %7zu %7zu %6zu %8.1f %8.1f %8.1f %8zu %8zu %8.1f\n", s.name.c_str(), T,
                            r.c_str(), st.blocks_provisioned, st.blocks_used, st.cores, 100 * st.padding_overhead,
                            100 * st.algorithmic_padding_overhead, 100 * st.total_padding_overhead, st.token_loads,
                            st.weight_loads, st.arithmetic_intensity_used);
            }
    std::fprintf(out, "\nexpert_parallel (Tenstorrent plan), D = %zu devices, uniform contiguous mapping; MB = 1e6 bytes\n",
                devices);
    std::fprintf(out, "%-14s %5s %-8s %8s %9s %6s %10s %10s %10s %10s %9s %9s\n", "shape", "T", "routing", "max_pairs",
                "mean", "imbal", "a2a_disp", "allgather", "allreduce", "ep_GFLOP", "tp_GFLOP", "ep_wMB");
    for (const auto& s : shapes)
        for (std::size_t T : tokens)
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, T, r);
                const auto st = backends::expert_parallel_stats(idx, T, s.topk, s.experts, s.hidden, s.inter,
                                                                     devices, {}, b);
                std::fprintf(out, "%-14s %5zu %-8s %8zu %9.1f %6.2f %9.2fM %9.2fM %9.2fM %10.2f %9.2f %8.1fM\n", s.name.c_str(),
                            T, r.c_str(), st.max_pairs, st.mean_pairs, st.imbalance, st.alltoallv_dispatch_bytes / 1e6,
                            st.allgather_bytes / 1e6, st.allreduce_bytes / 1e6, st.ep_max_device_flops / 1e9,
                            st.tp_max_device_flops / 1e9, st.ep_max_device_weight_bytes / 1e6);
            }
    std::fprintf(out, "\ndecode weight loading: selective (the unique experts' weights) vs all experts; switch to all\n"
                "experts when batch*K >= alpha*E (alpha = %.2f)\n", alpha);
    std::fprintf(out, "%-14s %5s %-8s %6s %6s %7s %12s %12s %9s %-12s %12s\n", "shape", "batch", "routing", "b*K", "a*E",
                "unique", "selective", "all", "sel_save%", "choice", "loaded");
    for (const auto& s : shapes)
        for (std::size_t batch : {1, 2, 4, 8, 16, 32, 64})
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, batch, r);
                const std::set<std::int64_t> unique(idx.begin(), idx.end());
                const double per = expert_weight_bytes(s, b);
                const double sel = per * double(unique.size()), all = per * double(s.experts);
                const bool all_experts = double(batch * s.topk) >= alpha * double(s.experts);
                std::fprintf(out, "%-14s %5zu %-8s %6zu %6.1f %7zu %10.1fMB %10.1fMB %9.1f %-12s %10.1fMB\n", s.name.c_str(),
                            batch, r.c_str(), batch * s.topk, alpha * double(s.experts), unique.size(), sel / 1e6,
                            all / 1e6, 100 * (1 - sel / all), all_experts ? "all-experts" : "selective",
                            (all_experts ? all : sel) / 1e6);
            }
}


void print_worked_examples(std::FILE* out) {
    // tests/backends/test_blockwise.cpp checks these figures against the guide's.
    const std::vector<std::pair<const char*, std::vector<std::size_t>>> cases = {
        {"best case: 250 pairs per expert", std::vector<std::size_t>(8, 250)},
        {"worst case: one expert 1750 pairs, the others 36 or 35", {1750, 36, 36, 36, 36, 36, 35, 35}}};
    for (const auto& [title, counts] : cases) {
        const auto plan = backends::plan_blocks(counts, 256, 8);
        std::fprintf(out, "1000 tokens, 8 experts, top-2, block_size 256, %s\n%s\n", title,
                     backends::blockwise_stats(plan, backends::BlockwiseOptions{256}).to_text().c_str());
    }
}

}  // namespace moe::bench
