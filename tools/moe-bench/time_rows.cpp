#include "time_rows.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moe/bench/bench_report.hpp"
#include "moe/bench/device_baselines.hpp"
#include "moe/bench/machine_rates.hpp"
#include "moe/spec/error.hpp"

namespace moe::bench_cli {

namespace {

using namespace moe::bench;

// The data types moe-bench times (f64 has no fast path worth timing).
moe::DType timed_dtype(const std::string& name) {
    const auto dtype = moe::parse_dtype(name);
    if (!dtype || !moe::is_floating(*dtype) || *dtype == moe::DType::f64)
        throw moe::InputError("--dtype " + name + ": expected f32, f16 or bf16");
    return *dtype;
}

// The rows as they come: measured ones printed and handed on, declined ones printed as skipped
// and counted, so that a run that timed nothing can say so (not_supported_anywhere).
class Rows {
public:
    Rows(std::FILE* table, bool vs_reference, const RowSink& measured)
        : table_(table), vs_reference_(vs_reference), measured_(measured) {}

    void emit(const BenchRow& r) {
        if (!r.not_supported.empty()) {
            print_skipped_row(table_, r);
            if (first_skipped_.empty())
                first_skipped_ = r.shape + " T = " + std::to_string(r.tokens) + " " +
                                 (r.weights.empty() ? r.dtype : r.dtype + " " + r.weights) + ": not supported: " +
                                 r.not_supported;
            return;
        }
        ++timed_;
        print_table_row(table_, r, vs_reference_);
        measured_(r);
    }

    // Throws InputError when every row was declined: a run that timed nothing is no benchmark,
    // and exit 0 would let a CI read an empty table as one.
    void not_supported_anywhere(const std::string& backend) const {
        if (timed_ == 0 && !first_skipped_.empty())
            throw moe::InputError("backend " + backend + " supports none of the rows asked for, so nothing was timed (" +
                                  first_skipped_ + ")");
    }

private:
    std::FILE* table_;
    bool vs_reference_;
    const RowSink& measured_;
    std::size_t timed_ = 0;
    std::string first_skipped_;
};

}  // namespace

moe::BackendMaker backend_maker(const std::string& backend, bool backend_given, const std::vector<std::string>& libs,
                                const std::string& device) {
    if (backend == "all")
        throw moe::InputError("--backend all: moe-bench times one backend; name one (moe-conform list lists them)");
    if (libs.empty()) return moe::backends::make_backend_makers({backend}, {}, {device}).front();
    const auto plugins = moe::backends::make_backend_makers({}, libs, {device});  // every plugin loaded
    std::string loaded;
    for (const auto& m : plugins) loaded += (loaded.empty() ? "" : ", ") + m.name;
    if (backend_given) {
        for (const auto& m : plugins)
            if (m.name == backend) return m;
        if (moe::backends::builtin_or_mutant(backend))
            throw moe::InputError("--backend " + backend + " is a built-in backend, but --backend-lib loaded " + loaded +
                                  ", which would not be timed: moe-bench times one backend; drop --backend to time the "
                                  "plugin, or drop --backend-lib to time " + backend);
        throw moe::InputError("unknown backend '" + backend + "': with --backend-lib, --backend names one of the plugins "
                              "loaded (" + loaded + ")");
    }
    if (plugins.size() != 1)
        throw moe::InputError("moe-bench times one backend; --backend-lib loaded " + std::to_string(plugins.size()) +
                              " plugins (" + loaded + "): pick one with --backend NAME");
    return plugins.front();
}

int time_rows(const moe::BackendMaker& maker, const RowPlan& plan, std::FILE* table, const RowSink& measured) {
    const std::string& backend = maker.name;
    const std::string& device = plan.device;
    const TimingOptions& o = plan.timing;
    if (!device.empty() && !moe::backends::opencl_family(backend))  // in moe-conform's words
        throw moe::InputError("--device " + device + " picks the OpenCL device of the opencl backend and its mutants; "
                              "--backend " + backend + " is none of them (leave --device out)");
    auto b = maker.make();
    if (!b->availability().available) throw moe::InputError("backend " + backend + " unavailable: " + b->availability().reason);
    for (const auto& dt : plan.dtypes) timed_dtype(dt);  // refuse a bad --dtype or --weights before anything is timed
    for (const auto& w : plan.weights)
        for (const auto& s : plan.shapes) compression_preset(w, s);
    const std::string description = b->description();
    Rows rows(table, o.vs_reference, measured);
    // The GEMM of the same FLOP count: every (token, slot) pair through one matrix of 3I outputs
    // by H inputs.
    if (backend == "opencl") {  // baselines on the backend's own device, timed after its repetitions
        TimingOptions device_timing = o;
        device_timing.interleave = false;
        DeviceCopyProbe copy_probe(device, std::size_t(512) << 20);
        print_device_table_header(table, b->name(), description, copy_probe.work());
        for (const auto& s : plan.shapes)
            for (std::size_t T : plan.tokens)
                for (const auto& dt : plan.dtypes) {
                    DeviceGemmProbe gemm_probe(device, T * s.topk, 3 * s.inter, s.hidden, timed_dtype(dt));
                    // The plain row, then the compressed ones (--weights) of the same data type.
                    std::vector<std::string> kinds{""};
                    kinds.insert(kinds.end(), plan.weights.begin(), plan.weights.end());
                    for (const auto& w : kinds) {
                        BenchRow r = time_backend(*b, s, T, timed_dtype(dt), plan.routing, gemm_probe, copy_probe,
                                                  device_timing, w);
                        r.same_device = true;
                        r.gemm_routine = gemm_probe.routine();
                        rows.emit(r);
                    }
                }
    } else {
        print_table_header(table, b->name(), description, plan.threads);
        ReadProbe read_probe(std::size_t(1) << 30, plan.threads);
        // Per shape, T and data type, the plain row and its compressed rows (--weights) are timed
        // together, round by round (time_backends_together), each on a backend instance of its own
        // (prepare() state is per instance): a compressed row's speedup over the plain row of its
        // data type compares times from the same stretch of time. (All data types at once would
        // hold every problem and its prepared copy: gpt-oss-20b's f32 and bf16 with two compressed
        // presets each is more than 24 GiB.)
        for (const auto& s : plan.shapes)
            for (std::size_t T : plan.tokens) {
                GemmProbe gemm_probe(T * s.topk, 3 * s.inter, s.hidden, plan.threads);
                double bf16 = 0, f32 = 0;  // this shape's plain rows, for the compressed rows' speedups
                std::vector<std::vector<BenchRow>> groups;  // per data type: the plain row, then the compressed
                for (const auto& dt : plan.dtypes) {
                    std::vector<std::unique_ptr<moe::Backend>> instances;
                    std::vector<RowRequest> requests{{nullptr, timed_dtype(dt), ""}};
                    for (const auto& w : plan.weights) requests.push_back({nullptr, timed_dtype(dt), w});
                    for (auto& q : requests) {
                        instances.push_back(maker.make());
                        q.backend = instances.back().get();
                    }
                    groups.push_back(time_backends_together(requests, s, T, plan.routing, gemm_probe, read_probe, o));
                    // 0 for a row the backend declined: a compressed row then has no speedup over it.
                    if (dt == "bf16") bf16 = groups.back().front().seconds;
                    if (dt == "f32") f32 = groups.back().front().seconds;
                }
                // Printed (and written) once every data type ran: the plain rows, then the compressed
                // ones, each with its speedups over this shape's bf16 and f32 rows.
                for (auto& g : groups) rows.emit(g.front());
                for (auto& g : groups)
                    for (std::size_t j = 1; j < g.size(); ++j) {
                        g[j].bf16_seconds = bf16;
                        g[j].f32_seconds = f32;
                        rows.emit(g[j]);
                    }
            }
    }
    rows.not_supported_anywhere(backend);
    // What the backend chose while running (the opencl backend's GEMM sizes and autotune).
    if (b->description() != description) std::fprintf(table, "moe-bench: %s\n", b->description().c_str());
    return 0;
}

}  // namespace moe::bench_cli
