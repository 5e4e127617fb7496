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
#include "machine_rates.hpp"
#include "moe/backends/opencl_backend.hpp"
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
    bool vs_reference = false;
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
    CLI11_PARSE(app, argc, argv);

    return moe::cli::run_with_exit_codes("moe-bench", [&] {
        std::vector<Shape> shapes;
        if (hidden) {
            shapes.push_back({"custom", type_arg == "gemm2" ? moe::ExpertType::gemm2_bias_swiglu_clamp : moe::ExpertType::gemm3_swiglu,
                              hidden, inter, experts, topk});
        } else {
            for (const auto& s : named_shapes())
                if (shape_arg == "all" || shape_arg == s.name) shapes.push_back(s);
            if (shapes.empty()) throw moe::InputError("unknown shape '" + shape_arg + "' (gpt-oss-20b, qwen3-30b-a3b, mixtral, all)");
        }
        auto b = moe::backends::make_builtin_backend(backend, {device});
        if (!b->availability().available) throw moe::InputError("backend " + backend + " unavailable: " + b->availability().reason);
        const auto* opencl = dynamic_cast<const moe::backends::OpenclBackend*>(b.get());
        if (opencl) std::printf("moe-bench: %s\n", b->description().c_str());
        const double read_gbs = moe::bench::read_bandwidth_gbs(std::size_t(1) << 30, threads, 10);
        std::printf("moe-bench: backend %s, %d threads; streaming read bandwidth %.1f GB/s (1 GiB, best of 10, %d threads)\n",
                    b->name().c_str(), threads, read_gbs, threads);
        std::printf("%-14s %5s %-5s %-8s %10s %9s %9s %6s %9s %8s %6s %8s\n", "shape", "T", "dtype", "routing", "median_ms",
                    "GFLOP/s", "gemm", "ratio", "weights", "GB/s", "of_bw", "vs_ref");
        std::vector<Row> rows;
        for (const auto& s : shapes) {
            for (std::size_t T : tokens) {
                // The plain GEMM of the same FLOP count: every (token, slot) pair through one matrix
                // of 3I outputs by H inputs.
                const double gemm = moe::bench::gemm_gflops(T * s.topk, 3 * s.inter, s.hidden, threads, T <= 8 ? 20 : 5);
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
                    std::vector<double> t;
                    std::vector<std::pair<double, std::map<std::string, double>>> by_run;  // opencl: (seconds, kernel times)
                    for (int i = 0; i < n; ++i) {
                        const auto st = std::chrono::steady_clock::now();
                        b->run(p, false);
                        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count());
                        if (opencl) by_run.emplace_back(t.back(), opencl->last_kernel_times());
                    }
                    std::sort(t.begin(), t.end());
                    r.seconds = t[t.size() / 2];
                    if (opencl) {  // the kernel split of the median run
                        std::sort(by_run.begin(), by_run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
                        r.kernel_seconds = by_run[by_run.size() / 2].second;
                    }
                    const double flops = 2.0 * double(T) * double(s.topk) * 3.0 * double(s.hidden) * double(s.inter);
                    r.gflops = flops / r.seconds / 1e9;
                    r.gemm_gflops = gemm;
                    r.weight_gb = weight_bytes_touched(p) / 1e9;
                    r.gbs = r.weight_gb / r.seconds;
                    r.read_gbs = read_gbs;
                    if (vs_reference) {
                        auto ref = moe::backends::make_builtin_backend("reference");
                        const auto st = std::chrono::steady_clock::now();
                        ref->run(p, false);
                        r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count();
                    }
                    std::printf("%-14s %5zu %-5s %-8s %10.3f %9.1f %9.1f %6.2f %7.3fGB %8.1f %6.2f", s.name.c_str(), T,
                                dt.c_str(), routing.c_str(), r.seconds * 1e3, r.gflops, r.gemm_gflops, r.gflops / r.gemm_gflops,
                                r.weight_gb, r.gbs, r.gbs / r.read_gbs);
                    if (vs_reference) std::printf(" %7.1fx", r.reference_seconds / r.seconds);
                    std::printf("\n");
                    if (opencl) {
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
