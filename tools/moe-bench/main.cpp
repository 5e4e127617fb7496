// moe-bench: times a backend on model-shaped MoE layers and prints every figure as a ratio to what
// this machine does in the same run (a plain GEMM of the same size, streaming read bandwidth).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_errors.hpp"
#include "engine_study.hpp"
#include "machine_rates.hpp"
#include "moe/backends/blockwise_backend.hpp"
#include "moe/backends/expert_parallel_backend.hpp"
#include "moe/backends/registry.hpp"
#include "moe/generator/synthesize.hpp"

namespace {

struct Shape {
    std::string name;
    moe::ExpertType type;
    std::size_t hidden, inter, experts, topk;
};

const std::vector<Shape>& named_shapes() {
    static const std::vector<Shape> s = {
        {"gpt-oss-20b", moe::ExpertType::gemm2_bias_swiglu_clamp, 2880, 2880, 32, 4},
        {"qwen3-30b-a3b", moe::ExpertType::gemm3_swiglu, 2048, 768, 128, 8},
        {"mixtral", moe::ExpertType::gemm3_swiglu, 4096, 14336, 8, 2},
    };
    return s;
}

struct Row {
    std::string shape, dtype, routing;
    std::size_t tokens = 0, used_experts = 0;
    double seconds = 0, prepare_seconds = 0, gflops = 0, gemm_gflops = 0, weight_gb = 0, gbs = 0, read_gbs = 0, reference_seconds = 0;
    std::map<std::string, double> kernel_seconds = {};  // opencl: device time per kernel, one run
};

moe::generator::CaseSpec spec_for(const Shape& s, std::size_t tokens, moe::DType dtype, const std::string& routing) {
    moe::generator::CaseSpec c;
    c.name = s.name;
    c.attributes = moe::attributes_for(s.type, moe::Convention::openvino, s.type == moe::ExpertType::gemm3_swiglu ? 1.0 : 1.702,
                                       7.0);
    c.seq = tokens;
    c.hidden = s.hidden;
    c.inter = s.inter;
    c.experts = s.experts;
    c.topk = s.topk;
    c.dtype = dtype;
    c.seed = 42;
    c.fills[moe::kHiddenStates] = {moe::generator::Fill::Kind::uniform, 4.0};
    if (routing == "skewed") c.routing.skew = 1.2;
    if (routing == "hot") c.routing.always = {0};
    return c;
}

double weight_bytes_touched(const moe::Problem& p) {
    std::set<std::int64_t> used;
    const auto& idx = p.input(moe::kTopkIndices);
    for (std::size_t i = 0; i < idx.size(); ++i) used.insert(idx.get_index(i));
    double per_expert = 0;
    for (const char* w : {moe::kWeight0, moe::kWeight1, moe::kWeight2, moe::kBias0, moe::kBias1})
        if (p.has(w)) per_expert += static_cast<double>(p.input(w).nbytes()) / static_cast<double>(p.input(w).shape()[0]);
    return per_expert * static_cast<double>(used.size());
}

// --strategy-stats: the execution-strategy simulators' statistics and the decode loading choice,
// from the routing alone (no data, nothing timed). The indices depend only on (seed, T, E, K,
// routing), not on H or I, so the problem is synthesised with H = I = 1.
std::vector<std::int64_t> routing_indices(const Shape& s, std::size_t T, const std::string& routing) {
    auto c = spec_for(s, T, moe::DType::f32, routing);
    c.hidden = c.inter = 1;
    const moe::Problem p = moe::generator::synthesize(c);
    const auto& idx = p.input(moe::kTopkIndices);
    std::vector<std::int64_t> v(idx.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = idx.get_index(i);
    return v;
}

// One expert's weight bytes (weights and biases) at `bytes` per element.
double expert_weight_bytes(const Shape& s, std::size_t bytes) {
    const double H = double(s.hidden), I = double(s.inter);
    const double elements = s.type == moe::ExpertType::gemm2_bias_swiglu_clamp ? 2 * I * H + H * I + 2 * I + H : 3 * H * I;
    return elements * double(bytes);
}

int strategy_stats(const std::vector<Shape>& shapes, const std::vector<std::size_t>& tokens, moe::DType dtype,
                   double alpha, std::size_t block_size, std::size_t devices) {
    const std::size_t b = moe::dtype_size(dtype);
    const std::vector<std::string> routings = {"uniform", "skewed"};
    std::printf("moe-bench --strategy-stats: routing only, nothing timed; %s weights (%zu bytes per element)\n",
                std::string(moe::dtype_name(dtype)).c_str(), b);
    std::printf("\nblockwise (Neuron BWMM), block_size %zu, token/weight/block skipping on, one core\n", block_size);
    std::printf("%-14s %5s %-8s %7s %7s %6s %8s %8s %8s %8s %8s %8s\n", "shape", "T", "routing", "blocks", "used",
                "cores", "pad_ovh%", "alg_pad%", "tot_pad%", "tok_lds", "w_loads", "AI_used");
    for (const auto& s : shapes)
        for (std::size_t T : tokens)
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, T, r);
                std::vector<std::size_t> counts(s.experts, 0);
                for (auto e : idx) ++counts[static_cast<std::size_t>(e)];
                moe::backends::BlockwiseOptions o;
                o.block_size = block_size;
                const auto st = moe::backends::blockwise_stats(moe::backends::plan_blocks(counts, block_size, s.experts), o);
                std::printf("%-14s %5zu %-8s %7zu %7zu %6zu %8.1f %8.1f %8.1f %8zu %8zu %8.1f\n", s.name.c_str(), T,
                            r.c_str(), st.blocks_provisioned, st.blocks_used, st.cores, 100 * st.padding_overhead,
                            100 * st.algorithmic_padding_overhead, 100 * st.total_padding_overhead, st.token_loads,
                            st.weight_loads, st.arithmetic_intensity_used);
            }
    std::printf("\nexpert_parallel (Tenstorrent plan), D = %zu devices, uniform contiguous mapping; MB = 1e6 bytes\n",
                devices);
    std::printf("%-14s %5s %-8s %8s %9s %6s %10s %10s %10s %10s %9s %9s\n", "shape", "T", "routing", "max_pairs",
                "mean", "imbal", "a2a_disp", "allgather", "allreduce", "ep_GFLOP", "tp_GFLOP", "ep_wMB");
    for (const auto& s : shapes)
        for (std::size_t T : tokens)
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, T, r);
                const auto st = moe::backends::expert_parallel_stats(idx, T, s.topk, s.experts, s.hidden, s.inter,
                                                                     devices, {}, b);
                std::printf("%-14s %5zu %-8s %8zu %9.1f %6.2f %9.2fM %9.2fM %9.2fM %10.2f %9.2f %8.1fM\n", s.name.c_str(),
                            T, r.c_str(), st.max_pairs, st.mean_pairs, st.imbalance, st.alltoallv_dispatch_bytes / 1e6,
                            st.allgather_bytes / 1e6, st.allreduce_bytes / 1e6, st.ep_max_device_flops / 1e9,
                            st.tp_max_device_flops / 1e9, st.ep_max_device_weight_bytes / 1e6);
            }
    std::printf("\ndecode weight loading: selective (the unique experts' weights) vs all experts; switch to all\n"
                "experts when batch*K >= alpha*E (alpha = %.2f)\n", alpha);
    std::printf("%-14s %5s %-8s %6s %6s %7s %12s %12s %9s %-12s %12s\n", "shape", "batch", "routing", "b*K", "a*E",
                "unique", "selective", "all", "sel_save%", "choice", "loaded");
    for (const auto& s : shapes)
        for (std::size_t batch : {1, 2, 4, 8, 16, 32, 64})
            for (const auto& r : routings) {
                const auto idx = routing_indices(s, batch, r);
                const std::set<std::int64_t> unique(idx.begin(), idx.end());
                const double per = expert_weight_bytes(s, b);
                const double sel = per * double(unique.size()), all = per * double(s.experts);
                const bool all_experts = double(batch * s.topk) >= alpha * double(s.experts);
                std::printf("%-14s %5zu %-8s %6zu %6.1f %7zu %10.1fMB %10.1fMB %9.1f %-12s %10.1fMB\n", s.name.c_str(),
                            batch, r.c_str(), batch * s.topk, alpha * double(s.experts), unique.size(), sel / 1e6,
                            all / 1e6, 100 * (1 - sel / all), all_experts ? "all-experts" : "selective",
                            (all_experts ? all : sel) / 1e6);
            }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "moe-bench: times a backend on MoE layers of model shapes, each figure also as a ratio to this machine's\n"
        "same-run GEMM rate (a plain f32 GEMM of the same FLOP count with the cpu backend's engine) and its\n"
        "streaming read bandwidth.\n\n"
        "Examples:\n"
        "  moe-bench --backend cpu --shape gpt-oss-20b --tokens 1,8,512 --dtype f32,bf16\n"
        "  moe-bench --backend cpu --shape all --tokens 512 --routing skewed --json bench.json\n"
        "  moe-bench --backend cpu --tokens 64 --experts 16 --topk 2 --hidden 1024 --inter 512 --vs-reference"};
    std::string backend = "cpu", shape_arg = "gpt-oss-20b", routing = "uniform", json_file, type_arg = "gemm3";
    std::vector<std::size_t> tokens{512};
    std::vector<std::string> dtypes{"f32"};
    std::size_t experts = 0, topk = 0, hidden = 0, inter = 0;
    int reps = 0, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    bool vs_reference = false, strategy = false;
    double alpha = 1.0;
    std::size_t block_size = 512, devices = 8;
    app.add_option("--backend", backend, "Backend to time (default cpu)");
    std::string device;
    app.add_option("--device", device, "opencl: the device (\"P:D\" or a name substring; default the first GPU, else the first device)");
    app.add_option("--shape", shape_arg, "gpt-oss-20b | qwen3-30b-a3b | mixtral | all (ignored with --hidden)");
    app.add_option("--tokens", tokens, "Token counts, comma-separated (default 512)")->delimiter(',');
    app.add_option("--dtype", dtypes, "Data types, comma-separated: f32, f16, bf16 (default f32)")->delimiter(',');
    app.add_option("--routing", routing, "uniform | skewed (Zipf 1.2) | hot (expert 0 in every token)")
        ->check(CLI::IsMember({"uniform", "skewed", "hot"}));
    app.add_option("--experts", experts, "Custom shape: experts");
    app.add_option("--topk", topk, "Custom shape: top-k");
    app.add_option("--hidden", hidden, "Custom shape: hidden size");
    app.add_option("--inter", inter, "Custom shape: intermediate size");
    app.add_option("--expert-type", type_arg, "Custom shape: gemm2 | gemm3")->check(CLI::IsMember({"gemm2", "gemm3"}));
    app.add_option("--reps", reps, "Timed repetitions (default: 20 for decode, 5 for prefill)");
    app.add_option("--threads", threads, "Threads for the machine baselines (the backend uses all)");
    app.add_flag("--vs-reference", vs_reference, "Also time the f64 reference (sparse) once and print the speedup");
    app.add_option("--json", json_file, "Also write the rows as JSON");
    app.add_flag("--strategy-stats", strategy,
                 "Print no timings: the blockwise statistics, the expert_parallel statistics (uniform and skewed routing,\n"
                 "tokens from --tokens, default 1,8,512,4096) and a decode table of selective vs all-experts loading");
    app.add_option("--alpha", alpha, "--strategy-stats: all-experts loading when batch*K >= alpha*E (default 1.0)");
    app.add_option("--block-size", block_size, "--strategy-stats: blockwise block size (default 512)");
    app.add_option("--devices", devices, "--strategy-stats: expert_parallel devices D (default 8)");
    bool worked_examples = false;
    app.add_flag("--worked-examples", worked_examples,
                 "Print the blockwise statistics of the Neuron guide's worked example (1000 tokens, 8 experts, top-2,\n"
                 "block 256) for its best case (250 pairs per expert) and worst case (1750, 36 x 5, 35 x 2)");
    bool study = false;
    app.add_flag("--engine-study", study,
                 "Print no backend timings: one expert's first and down GEMM of each --shape for 1..64 rows, 1 thread,\n"
                 "cold weights, with the cpu engine on the weights in place and on weights packed for the library");
    CLI11_PARSE(app, argc, argv);

    return moe::cli::run_with_exit_codes("moe-bench", [&] {
        if (worked_examples) {
            // tests/test_blockwise.cpp checks these figures against the guide's.
            const std::vector<std::pair<const char*, std::vector<std::size_t>>> cases = {
                {"best case: 250 pairs per expert", std::vector<std::size_t>(8, 250)},
                {"worst case: one expert 1750 pairs, the others 36 or 35", {1750, 36, 36, 36, 36, 36, 35, 35}}};
            for (const auto& [title, counts] : cases) {
                const auto plan = moe::backends::plan_blocks(counts, 256, 8);
                std::printf("1000 tokens, 8 experts, top-2, block_size 256, %s\n%s\n", title,
                            moe::backends::blockwise_stats(plan, moe::backends::BlockwiseOptions{256}).to_text().c_str());
            }
            return 0;
        }
        std::vector<Shape> shapes;
        if (hidden) {
            shapes.push_back({"custom", type_arg == "gemm2" ? moe::ExpertType::gemm2_bias_swiglu_clamp : moe::ExpertType::gemm3_swiglu,
                              hidden, inter, experts, topk});
        } else {
            for (const auto& s : named_shapes())
                if (shape_arg == "all" || shape_arg == s.name) shapes.push_back(s);
            if (shapes.empty()) throw moe::InputError("unknown shape '" + shape_arg + "' (gpt-oss-20b, qwen3-30b-a3b, mixtral, all)");
        }
        if (study) {
            for (const auto& s : shapes) {
                const bool gemm2 = s.type == moe::ExpertType::gemm2_bias_swiglu_clamp;
                moe::bench::engine_study(s.name + " first GEMM", gemm2 ? 2 * s.inter : s.inter, s.hidden);
                moe::bench::engine_study(s.name + " down GEMM", s.hidden, s.inter);
            }
            return 0;
        }
        if (strategy) {
            if (app.count("--tokens") == 0) tokens = {1, 8, 512, 4096};
            const auto dtype = moe::parse_dtype(dtypes.at(0));
            if (!dtype || !moe::is_floating(*dtype)) throw moe::InputError("--dtype " + dtypes.at(0) + ": expected a float type");
            if (block_size == 0 || devices == 0) throw moe::InputError("--block-size and --devices must be >= 1");
            if (!(alpha > 0)) throw moe::InputError("--alpha must be > 0");
            return strategy_stats(shapes, tokens, *dtype, alpha, block_size, devices);
        }
        auto b = moe::backends::make_builtin_backend(backend, {device});
        if (!b->availability().available) throw moe::InputError("backend " + backend + " unavailable: " + b->availability().reason);
        std::printf("moe-bench: %s\n", b->description().c_str());
        moe::bench::ReadProbe read_probe(std::size_t(1) << 30, threads);
        std::printf("moe-bench: backend %s; machine figures with %d threads: a plain f32 GEMM of the same FLOP count (gemm) and a "
                    "1 GiB streaming read (of_bw), timed between the backend's repetitions; every figure is a median\n",
                    b->name().c_str(), threads);
        std::printf("%-14s %5s %-5s %-8s %10s %9s %9s %6s %9s %8s %8s %6s %8s\n", "shape", "T", "dtype", "routing", "median_ms",
                    "GFLOP/s", "gemm", "ratio", "weights", "GB/s", "read", "of_bw", "vs_ref");
        std::vector<Row> rows;
        for (const auto& s : shapes) {
            for (std::size_t T : tokens) {
                // The plain GEMM of the same FLOP count: every (token, slot) pair through one matrix
                // of 3I outputs by H inputs.
                moe::bench::GemmProbe gemm_probe(T * s.topk, 3 * s.inter, s.hidden, threads);
                for (const auto& dt : dtypes) {
                    const auto dtype = moe::parse_dtype(dt);
                    if (!dtype || !moe::is_floating(*dtype) || *dtype == moe::DType::f64)
                        throw moe::InputError("--dtype " + dt + ": expected f32, f16 or bf16");
                    const moe::Problem p = moe::generator::synthesize(spec_for(s, T, *dtype, routing));
                    Row r{s.name, dt, routing, T};
                    const int n = reps > 0 ? reps : (T <= 8 ? 20 : 5);
                    const auto prep_start = std::chrono::steady_clock::now();
                    b->prepare(p);  // once per problem, as at model load; timed on its own
                    r.prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - prep_start).count();
                    b->run(p, false);  // warm-up
                    std::vector<double> t, t_gemm, t_read;
                    std::vector<std::pair<double, std::map<std::string, double>>> by_run;  // opencl: (seconds, kernel times)
                    for (int i = 0; i < n; ++i) {
                        const auto st = std::chrono::steady_clock::now();
                        b->run(p, false);
                        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count());
                        // A backend that reports kernel times (a device queue's profiling) gets its device
                        // time printed beside the wall time.
                        if (auto kt = b->last_kernel_times(); !kt.empty()) by_run.emplace_back(t.back(), std::move(kt));
                        t_gemm.push_back(gemm_probe.seconds());
                        t_read.push_back(read_probe.seconds());
                    }
                    r.seconds = moe::bench::median(t);
                    if (!by_run.empty()) {  // the kernel split of the median run
                        std::sort(by_run.begin(), by_run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
                        r.kernel_seconds = by_run[by_run.size() / 2].second;
                    }
                    const double flops = 2.0 * double(T) * double(s.topk) * 3.0 * double(s.hidden) * double(s.inter);
                    r.gflops = flops / r.seconds / 1e9;
                    r.gemm_gflops = gemm_probe.flops() / moe::bench::median(t_gemm) / 1e9;
                    r.weight_gb = weight_bytes_touched(p) / 1e9;
                    r.gbs = r.weight_gb / r.seconds;
                    r.read_gbs = read_probe.bytes() / moe::bench::median(t_read) / 1e9;
                    if (vs_reference) {
                        auto ref = moe::backends::make_builtin_backend("reference");
                        const auto st = std::chrono::steady_clock::now();
                        ref->run(p, false);
                        r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count();
                    }
                    std::printf("%-14s %5zu %-5s %-8s %10.3f %9.1f %9.1f %6.2f %7.3fGB %8.1f %8.1f %6.2f", s.name.c_str(), T,
                                dt.c_str(), routing.c_str(), r.seconds * 1e3, r.gflops, r.gemm_gflops, r.gflops / r.gemm_gflops,
                                r.weight_gb, r.gbs, r.read_gbs, r.gbs / r.read_gbs);
                    if (vs_reference) std::printf(" %7.1fx", r.reference_seconds / r.seconds);
                    std::printf("\n");
                    if (!r.kernel_seconds.empty()) {
                        // Device time per kernel of the median run (profiling events).
                        double sum = 0;
                        for (const auto& [k, sec] : r.kernel_seconds) sum += sec;
                        std::printf("  kernels (median run, device time %.3f ms of %.3f ms):", sum * 1e3, r.seconds * 1e3);
                        for (const auto& [k, sec] : r.kernel_seconds)
                            std::printf(" %s %.3f ms (%.0f%%)", k.c_str(), sec * 1e3, sum > 0 ? 100 * sec / sum : 0.0);
                        std::printf("\n");
                    }
                    std::fflush(stdout);
                    rows.push_back(r);
                }
            }
        }
        if (!json_file.empty()) {
            nlohmann::json j = nlohmann::json::array();
            for (const auto& r : rows)
                j.push_back({{"shape", r.shape}, {"tokens", r.tokens}, {"dtype", r.dtype}, {"routing", r.routing},
                             {"backend", b->name()}, {"median_seconds", r.seconds}, {"prepare_seconds", r.prepare_seconds}, {"gflops", r.gflops},
                             {"gemm_gflops", r.gemm_gflops}, {"weight_gb", r.weight_gb}, {"gbs", r.gbs},
                             {"read_gbs", r.read_gbs}, {"reference_seconds", r.reference_seconds}, {"kernel_seconds", r.kernel_seconds}});
            std::ofstream(json_file) << j.dump(2) << "\n";
        }
        return 0;
    });
}
