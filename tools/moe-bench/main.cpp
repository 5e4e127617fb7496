// moe-bench: times a backend on model-shaped MoE layers and prints every figure as a ratio to what
// this machine does in the same run (a plain GEMM of the same size, streaming read bandwidth). The
// measuring and printing live in tools/bench (moe_bench); this file parses flags and dispatches.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_checks.hpp"
#include "cli_errors.hpp"
#include "cli_outputs.hpp"
#include "moe/backends/registry.hpp"
#include "moe/bench/backend_timing.hpp"
#include "moe/bench/bench_report.hpp"
#include "moe/bench/decode_study.hpp"
#include "moe/bench/device_baselines.hpp"
#include "moe/bench/engine_study.hpp"
#include "moe/bench/strategy_stats.hpp"
#include "moe/bench/transfer_study.hpp"
#include "memory_checks.hpp"
#include "modes.hpp"
#include "moe/spec/stdout_to_stderr.hpp"
#include "plugin_child.hpp"
#include "time_rows.hpp"

namespace {

using namespace moe::bench;
using namespace moe::bench_cli;  // memory_checks.hpp, time_rows.hpp

// A custom shape takes all four of its flags (a missing one would be a zero-sized layer) and a
// top-k the experts can fill; refused before anything is timed or printed.
void check_custom_shape(const CLI::App& app, std::size_t experts, std::size_t topk) {
    bool any = false;
    std::string missing;
    for (const char* flag : {"--experts", "--topk", "--hidden", "--inter"}) {
        if (app.count(flag)) any = true;
        else missing += std::string(" ") + flag;
    }
    if (any && !missing.empty())
        throw moe::InputError("a custom shape needs --experts, --topk, --hidden and --inter; missing:" + missing);
    if (!any && app.count("--expert-type"))
        throw moe::InputError("--expert-type is a custom shape's (with --experts, --topk, --hidden, --inter): the "
                              "--shape layers have their own");
    // --shape names layers of their own: beside a custom shape one of the two would be ignored.
    if (any && app.count("--shape"))
        throw moe::InputError("--shape and the custom shape (--experts, --topk, --hidden, --inter) describe two layers: "
                              "give one of them");
    if (any && topk > experts)
        throw moe::InputError("--topk " + std::to_string(topk) + " exceeds --experts " + std::to_string(experts) +
                              ": each token picks top-k distinct experts");
}

// --strategy-stats: the most --devices and --block-size, checked when the flags are read. The
// statistics hold a few vectors per device and block_size rows per expert: 10^8 devices ran for
// minutes, 10^10-row blocks ended in bad_alloc (exit 3). 65536 devices is far past any shape's
// experts (a device past them holds none); a block of 2^20 rows is past any expert's pairs at the
// --tokens this mode takes (strategy_mode).
constexpr std::uint64_t kMaxDevices = 65536;
constexpr std::uint64_t kMaxBlockSize = std::uint64_t(1) << 20;

// moe-bench's flags as given. The lists are kept whole, checked and split by cli_checks.hpp.
struct Flags {
    std::string backend = "cpu", shape = "gpt-oss-20b", routing = "uniform", json_file, expert_type = "gemm3", device;
    std::vector<std::string> tokens{"512"}, dtypes{"f32"}, weights, backend_libs;
    std::size_t experts = 0, topk = 0, hidden = 0, inter = 0;
    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    double plugin_timeout = 3600;
    TimingOptions timing;
    StrategyOptions stats;
};

// The same flags, split and checked: what the modes run on.
struct Layers {
    std::vector<Shape> shapes;
    std::vector<std::size_t> tokens;
    std::vector<std::string> dtypes, weights;
};

void add_flags(CLI::App& app, Flags& f) {
    using moe::cli::count_check;
    using moe::cli::list_check;
    const auto count = count_check(std::numeric_limits<std::size_t>::max());
    const auto int_count = count_check(static_cast<std::uint64_t>(std::numeric_limits<int>::max()));
    app.add_option("--backend", f.backend,
                   "Backend to time (default cpu; with --backend-lib: the plugin, or which of the plugins)");
    app.add_option("--backend-lib", f.backend_libs,
                   "Time a backend plugin (a shared library speaking spec/include/moe_conform/backend_abi.h, as for\n"
                   "moe-conform run --backend-lib): your kernel on model-shaped layers, against the same machine figures")
        ->check(CLI::ExistingFile);
    app.add_option("--device", f.device,
                   "opencl: the device (\"P:D\" or a name substring; default the first GPU, else the first device)")
        ->check(moe::cli::kNonEmpty);
    app.add_option("--shape", f.shape,
                   "gpt-oss-20b | qwen3-30b-a3b | mixtral | all (default gpt-oss-20b; not with a custom shape,\n"
                   "--experts ... --inter)");
    app.add_option("--tokens", f.tokens, "Token counts T, comma-separated, each at least 1 and given once (default 512)")
        ->transform(list_check(count))
        ->type_name("T,...");
    app.add_option("--dtype", f.dtypes, "Data types, comma-separated, each given once: f32, f16, bf16 (default f32)")
        ->check(list_check(CLI::Validator()))
        ->type_name("TYPE,...");
    app.add_option("--weights", f.weights,
                   "Also time compressed weights, comma-separated: u4, i4 (f16 scales per group of 128, or 32 where 128\n"
                   "does not divide H and I; u4 with zero points), u8, i8 (per channel), mxfp4, f8e4m3, f8e5m2; each row\n"
                   "after the plain ones, with its speedup over this run's bf16 and f32 rows of the same shape and T (host\n"
                   "backends; opencl rows compare by dev_ms). A data type's plain and compressed rows are timed together,\n"
                   "one repetition of each in turn, so their ratio holds on a host whose speed drifts (the other data\n"
                   "type's row was timed apart)")
        ->check(list_check(CLI::Validator()))
        ->type_name("TYPE,...");
    app.add_option("--routing", f.routing, "uniform | skewed (Zipf 1.2) | hot (expert 0 in every token); default uniform")
        ->check(CLI::IsMember({"uniform", "skewed", "hot"}));
    app.add_option("--experts", f.experts, "Custom shape (give all four: --experts, --topk, --hidden, --inter): experts")
        ->transform(count);
    app.add_option("--topk", f.topk, "Custom shape: top-k (at most --experts)")->transform(count);
    app.add_option("--hidden", f.hidden, "Custom shape: hidden size")->transform(count);
    app.add_option("--inter", f.inter, "Custom shape: intermediate size")->transform(count);
    app.add_option("--expert-type", f.expert_type, "Custom shape: gemm2 | gemm3 (default gemm3)")
        ->check(CLI::IsMember({"gemm2", "gemm3"}));
    app.add_option("--timeout", f.plugin_timeout,
                   "--backend-lib: seconds the plugin's whole benchmark may take before it is killed as hung (exit 1;\n"
                   "default 3600, 0 = no limit)")
        ->check(moe::cli::kNonNegative);
    app.add_option("--reps", f.timing.reps,
                   "Timed repetitions, at least 1 (default: 20 for decode, T <= 8; 5 for prefill, T > 8; 15 for\n"
                   "--transfer-study)")
        ->transform(int_count);
    app.add_option("--threads", f.threads,
                   "Threads for the machine baselines (the backend uses all) and for --decode-study\n(default " +
                       std::to_string(f.threads) + ": this machine's hardware threads; at most " +
                       std::to_string(moe::cli::max_threads()) + ", the larger of 1024 and 4 per hardware\n"
                       "thread; more than the hardware threads is a warning)")
        ->transform(moe::cli::threads_check());
    // The switches take no value: `--strategy-stats=false` ran the mode (CLI11 counts the flag as
    // given), so a value is refused (moe::cli::parse_flags).
    app.add_flag("--vs-reference", f.timing.vs_reference, "Also time the f64 reference (sparse) once and print the speedup")
        ->disable_flag_override();
    app.add_option("--json", f.json_file,
                   "Also write the rows as JSON (those measured before a --backend-lib plugin failed, if it did)")
        ->check(moe::cli::kOutputFile);
    // The modes: at most one; each refuses a flag it does not read (modes.hpp).
    app.add_flag("--strategy-stats",
                 "Mode: print no timings, but the blockwise statistics, the expert_parallel statistics (uniform and\n"
                 "skewed routing, tokens from --tokens, default 1,8,512,4096; weights of one --dtype) and a decode\n"
                 "table of selective vs all-experts loading. Its routing tables may take 1 GiB per shape and T\n"
                 "(qwen3-30b-a3b: about 880,000 tokens, some 20 s); more is refused, naming the flag")
        ->disable_flag_override();
    app.add_option("--alpha", f.stats.alpha, "--strategy-stats: all-experts loading when batch*K >= alpha*E (default 1.0)")
        ->check(moe::cli::kPositive);
    app.add_option("--block-size", f.stats.block_size,
                   "--strategy-stats: blockwise block size (default 512, at most " + std::to_string(kMaxBlockSize) + ")")
        ->transform(count_check(kMaxBlockSize));
    app.add_option("--devices", f.stats.devices,
                   "--strategy-stats: expert_parallel devices D (default 8, at most " + std::to_string(kMaxDevices) + ")")
        ->transform(count_check(kMaxDevices));
    app.add_flag("--worked-examples",
                 "Mode: print the blockwise statistics of the Neuron guide's worked example (1000 tokens, 8 experts,\n"
                 "top-2, block 256) for its best case (250 pairs per expert) and worst case (1750, 36 x 5, 35 x 2)")
        ->disable_flag_override();
    app.add_flag("--engine-study",
                 "Mode: print no backend timings, but one expert's first and down GEMM of each --shape for 1..64 rows,\n"
                 "1 thread, cold weights, with the cpu engine on the weights in place and on weights packed for the library")
        ->disable_flag_override();
    app.add_flag("--decode-study",
                 "Mode: print no backend timings, but the cpu backend's decode kernels alone, one row of bf16 values\n"
                 "against one expert's first-GEMM weights of each --shape, for bf16, f32 and each --weights type (default\n"
                 "u4,mxfp4): GB/s of stored bytes and weights/s with the weights in cache and from memory, against the\n"
                 "read bandwidth and bf16 (--threads threads); 4-bit types once per dot-product engine the CPU runs\n"
                 "(int8, bf16: the cpu backend takes one, by processor, or as MOE_CPU_DECODE_PRODUCTS says)")
        ->disable_flag_override();
    app.add_flag("--transfer-study",
                 "Mode, --backend opencl: print no backend timings, but what moving each --shape's hidden states (T x\n"
                 "hidden in each --dtype, for each --tokens) to the device and back costs: the backend's staged path with\n"
                 "its own plan and other thread counts and chunk sizes, one DMA from pinned memory, one from pageable memory")
        ->disable_flag_override();
}

// Each --weights preset's groups must tile both GEMMs' K (--hidden for the first, --inter for the
// down GEMM): refused here, naming the flags. The generator refused it only after the header and
// the machine probes, in words that named neither flag ("group_size 32 does not divide K = 16").
void check_weight_groups(const std::vector<std::string>& weights, const std::vector<Shape>& shapes) {
    for (const auto& w : weights)
        for (const auto& s : shapes) {
            const std::size_t g = compression_preset(w, s).group_size;  // 0: per channel
            if (g == 0 || (s.hidden % g == 0 && s.inter % g == 0)) continue;
            throw moe::InputError("--weights " + w + ": its groups of " + std::to_string(g) +
                                  " weights must divide the hidden size " + std::to_string(s.hidden) +
                                  " and the intermediate size " + std::to_string(s.inter) + " of shape " + s.name +
                                  (s.name == "custom" ? " (--hidden, --inter)" : ""));
        }
}

// The layers the flags describe: a custom shape or named ones, the lists split (each item once).
Layers layers(const CLI::App& app, const Flags& f) {
    using moe::cli::list_items;
    const std::string repeats = "(it would repeat the same rows)";
    check_custom_shape(app, f.experts, f.topk);
    Layers l;
    l.tokens = moe::cli::list_counts("--tokens", f.tokens, repeats);
    l.dtypes = list_items("--dtype", f.dtypes, repeats);
    l.weights = list_items("--weights", f.weights, repeats);
    l.shapes = f.hidden ? std::vector<Shape>{{"custom", f.expert_type == "gemm2" ? moe::ExpertType::gemm2_bias_swiglu_clamp
                                                                                 : moe::ExpertType::gemm3_swiglu,
                                              f.hidden, f.inter, f.experts, f.topk}}
                        : select_shapes(f.shape);
    check_weight_groups(l.weights, l.shapes);
    return l;
}

// --transfer-study: each shape's hidden states at each T and data type, moved to the device and back.
int transfer_mode(const Flags& f, const Layers& l) {
    if (f.backend != "opencl")
        throw moe::InputError("--transfer-study times host-device transfers of the opencl backend; --backend " +
                              f.backend + " moves nothing to a device");
    std::vector<TransferSize> sizes;
    for (const auto& name : l.dtypes) {
        const auto t = moe::parse_dtype(name);
        if (!t || (*t != moe::DType::f32 && *t != moe::DType::f16 && *t != moe::DType::bf16))
            throw moe::InputError("--dtype " + name + ": expected f32, f16 or bf16");
        for (const auto& s : l.shapes)
            for (const auto T : l.tokens) {
                // Held three times on the host (in, out, pinned staging): refused, named,
                // past the machine's memory (computed in double: no wrap-around).
                const double bytes = double(T) * double(s.hidden) * double(moe::dtype_size(*t));
                if (machine_memory() > 0 && 3 * bytes > machine_memory())
                    throw moe::InputError("--transfer-study: " + s.name + " at T = " + std::to_string(T) + " moves " +
                                          std::to_string(bytes / 1e9) +
                                          " GB each way, more than a third of this machine's memory");
                sizes.push_back({s.name + " T=" + std::to_string(T) + " " + name, T * s.hidden * moe::dtype_size(*t)});
            }
    }
    transfer_study(f.device, sizes, f.timing.reps > 0 ? f.timing.reps : 15);
    return 0;
}

// --decode-study and --engine-study: the cpu backend's own kernels, apart from the layer.
int cpu_kernel_study(const std::string& mode, const Flags& f, const Layers& l) {
    if (f.backend != "cpu")
        throw moe::InputError(mode + " times the cpu backend's own kernels; --backend " + f.backend + " has none of them");
    if (mode == "--decode-study") {
        const std::vector<std::string> types = l.weights.empty() ? std::vector<std::string>{"u4", "mxfp4"} : l.weights;
        check_weight_groups(types, l.shapes);  // a bad --weights refused before anything runs
        for (const auto& s : l.shapes) decode_study(s, types, f.threads);
        return 0;
    }
    for (const auto& s : l.shapes) {
        const bool gemm2 = s.type == moe::ExpertType::gemm2_bias_swiglu_clamp;
        engine_study(s.name + " first GEMM", gemm2 ? 2 * s.inter : s.inter, s.hidden);
        engine_study(s.name + " down GEMM", s.hidden, s.inter);
    }
    return 0;
}


// --strategy-stats: statistics of the routing alone, for one weight type's bytes.
int strategy_mode(const CLI::App& app, const Flags& f, Layers l) {
    if (app.count("--tokens") == 0) l.tokens = {1, 8, 512, 4096};
    if (l.dtypes.size() > 1)
        throw moe::InputError("--strategy-stats takes one --dtype (its bytes per weight), not " +
                              std::to_string(l.dtypes.size()));
    check_strategy_size(l.shapes, l.tokens, f.stats);
    const auto dtype = moe::parse_dtype(l.dtypes.front());
    if (!dtype) throw moe::InputError("--dtype " + l.dtypes.front() + ": expected a float type");
    StrategyOptions stats = f.stats;
    stats.dtype = *dtype;
    print_strategy_stats(stdout, l.shapes, l.tokens, stats);
    return 0;
}

// The default mode: the backend's rows, timed; a plugin in a child process, which sends each row
// back as it is measured. --json gets the rows measured however the plugin ended, with its exit
// status, unless the child refused the flags (exit 2) before timing anything, as a built-in
// backend's run writes no file then.
int timing_mode(const CLI::App& app, const Flags& f, const Layers& l) {
    if (app.count("--timeout") > 0 && f.backend_libs.empty())
        throw moe::InputError("--timeout limits a --backend-lib plugin, timed in a child process; backend " + f.backend +
                              " runs in moe-bench's own, with no limit");
    const moe::BackendMaker maker = backend_maker(f.backend, app.count("--backend") > 0, f.backend_libs, f.device);
    std::vector<std::string> rows;  // row_json's
    const RowPlan plan{l.shapes, l.tokens, l.dtypes, l.weights, f.routing, f.device, f.threads, f.timing};
    if (maker.library.empty()) {  // a built-in backend or a mutant
        const int status = time_rows(maker, plan, stdout, [&](const BenchRow& r) { rows.push_back(row_json(r)); });
        if (!f.json_file.empty()) write_rows_json(f.json_file, rows);
        return status;
    }
    // A plugin's failure is the plugin's (exit 1), not moe-bench's internal error (exit 3).
    const int status = moe::bench_cli::run_plugin_in_child(
        maker.name,
        [&](const moe::bench_cli::SendLine& send) {
            // In the child, which runs nothing but the plugin and the table: what the plugin
            // prints to stdout goes to stderr, the table to stdout as before (stdout_to_stderr.hpp).
            const int table_fd = moe::stdout_to_stderr_for_good();
            std::FILE* table = table_fd >= 0 ? ::fdopen(table_fd, "w") : nullptr;
            return moe::cli::run_with_exit_codes("moe-bench", [&] {
                try {
                    return time_rows(maker, plan, table ? table : stdout,
                                     [&](const BenchRow& r) { send(row_json(r)); });
                } catch (const moe::InputError&) {
                    throw;
                } catch (const moe::OutputError&) {
                    throw;
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "moe-bench: error: backend %s failed: %s\n", maker.name.c_str(), e.what());
                    return 1;
                }
            });
        },
        f.plugin_timeout, rows);
    if (!f.json_file.empty() && status != 2) {
        write_rows_json(f.json_file, rows);
        if (status != 0)
            std::fprintf(stderr, "moe-bench: %s holds the %zu row%s measured before the failure\n", f.json_file.c_str(),
                         rows.size(), rows.size() == 1 ? "" : "s");
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "moe-bench: times a backend on MoE layers of model shapes, each figure also as a ratio to this machine's\n"
        "same-run GEMM rate (a plain f32 GEMM of the same FLOP count with the cpu backend's engine) and its\n"
        "streaming read bandwidth; for --backend opencl, to its device's: a CLBlast GEMM of the same FLOP count in\n"
        "the case's type and a copy kernel, against the backend's device time. A mode flag (--strategy-stats,\n"
        "--worked-examples, --engine-study, --decode-study, --transfer-study; at most one) prints another table\n"
        "instead; a flag the mode does not read is refused.\n\n"
        "Examples:\n"
        "  moe-bench --backend cpu --shape gpt-oss-20b --tokens 1,8,512 --dtype f32,bf16\n"
        "  moe-bench --backend cpu --shape all --tokens 512 --routing skewed --json bench.json\n"
        "  moe-bench --backend cpu --tokens 64 --experts 16 --topk 2 --hidden 1024 --inter 512 --vs-reference\n"
        "  moe-bench --backend cpu --shape gpt-oss-20b --tokens 1,8 --dtype bf16,f32 --weights u4,mxfp4\n"
        "  moe-bench --backend-lib ./libmy_moe.so --shape gpt-oss-20b --tokens 1,512   # your kernel as a C plugin"};
    app.footer(
        "Exit status: 0 the table printed; 1 the backend failed while being timed (threw, or, for a --backend-lib\n"
        "plugin, timed in a child process, crashed, ended the process or ran past --timeout); 2 bad flags (two\n"
        "modes, a flag the mode does not read, a switch given a value such as --strategy-stats=false, a list item\n"
        "empty or given twice, a number out of its range), a layer past this machine's memory or a --strategy-stats\n"
        "table past its budget, an unavailable backend, a backend that supports none of the rows asked for,\n"
        "a built-in --backend beside --backend-lib (moe-bench times one backend), or a --json that cannot be\n"
        "written or is the --backend-lib plugin; 3 an internal error of moe-bench. A row the backend declines\n"
        "(its supports(), as moe-conform run SKIPs a case) is not timed: its line in the table says\n"
        "\"skipped: BACKEND: not supported: REASON\", and it has no --json row; the others are timed (exit 0).\n"
        "On stderr, under the progress line that named it, \"ROW not timed: BACKEND does not support it: REASON\"\n"
        "as soon as supports() answers (the table line comes once every data type of the shape and T has run).");
    Flags f;
    add_flags(app, f);
    if (const int code = moe::cli::parse_flags(app, argc, argv); code >= 0) return code;

    return moe::cli::run_with_exit_codes("moe-bench", [&] {
        const std::string mode = moe::bench_cli::check_mode_flags(app);
        // --json onto the plugin it times replaced the .so with the rows, exit 0.
        moe::cli::check_outputs_spare_inputs({f.backend_libs, {{"--json", f.json_file}}, {}});
        if (const unsigned hardware = std::thread::hardware_concurrency();
            app.count("--threads") > 0 && hardware > 0 && static_cast<unsigned>(f.threads) > hardware)
            std::fprintf(stderr,
                         "moe-bench: warning: --threads %d is more than this machine's %u hardware threads: the "
                         "machine figures are measured oversubscribed\n",
                         f.threads, hardware);
        if (mode == "--worked-examples") {
            print_worked_examples(stdout);
            return 0;
        }
        const Layers l = layers(app, f);
        if (mode == "--strategy-stats") return strategy_mode(app, f, l);
        if (mode == "--transfer-study") return transfer_mode(f, l);
        const bool cpu_backend = f.backend == "cpu" && f.backend_libs.empty();  // beside a plugin: refused
        check_fits_memory(l.shapes, l.tokens, l.dtypes, l.weights.size(), cpu_backend);
        if (!mode.empty()) return cpu_kernel_study(mode, f, l);
        return timing_mode(app, f, l);
    });
}
