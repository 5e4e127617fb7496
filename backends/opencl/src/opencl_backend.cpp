#include "moe/backends/opencl_backend.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "moe/backends/mutation_table.hpp"
#include "moe/backends/opencl_testing.hpp"
#include "moe/spec/compression.hpp"

#include "cl_device.hpp"
#include "cl_runtime.hpp"
#include "cl_tune.hpp"
#include "environment_setting.hpp"
#include "gemm_config.hpp"
#include "host_transfer.hpp"
#include "kernel_override.hpp"
#include "opencl_pipeline.hpp"
#include "program_dump.hpp"

namespace moe::backends {

namespace {

constexpr const char* kStagesText = "OpenCL pipeline (mask_gen, gather, tiled GEMM, SwiGLU, scatter-reduce)";

// The selected device's runtime, or why there is none.
struct Selected {
    std::unique_ptr<ocl::Runtime> runtime;
    std::string reason;
};

Selected select(const std::string& spec) {
    Selected s;
    try {
        const ocl::Devices devices = ocl::enumerate_devices();
        std::string why;
        const auto d = ocl::select_device(devices, spec, why);
        if (!d) {
            s.reason = why;
            return s;
        }
        // A malformed MOE_OPENCL_* variable is named here, not in the middle of a run.
        if (std::string env = opencl_environment_problem(); !env.empty()) {
            s.reason = env;
            return s;
        }
        s.runtime = std::make_unique<ocl::Runtime>(*d);
    } catch (const ocl::ClError& e) {
        s.reason = e.what();
    }
    return s;
}

// MOE_OPENCL_FUSE: unset, empty or 1 fuses decode's launches (PipelineOptions::fuse), 0 does not;
// anything else is refused (opencl_environment_problem).
bool fuse_from_environment() {
    return ocl::environment_setting("MOE_OPENCL_FUSE") != "0";
}

// The -D flags that compile a kernel mutation in (kernels/gemm.cl); "" for the others.
std::string mutation_defines(OpenclMutation m) {
    switch (m) {
        case OpenclMutation::tile_edge_dropped: return "-DMOE_MUT_TILE_EDGE";
        case OpenclMutation::missing_barrier: return "-DMOE_MUT_NO_BARRIER";
        case OpenclMutation::tile_row_skipped: return "-DMOE_MUT_TILE_ROW_SKIP";
        default: return "";
    }
}

std::vector<const unsigned char*> weight_sources(const Problem& p) {
    std::vector<const unsigned char*> v;
    for (const char* w : {kWeight0, kWeight1, kWeight2, kBias0, kBias1}) v.push_back(p.has(w) ? p.input(w).data() : nullptr);
    return v;
}

constexpr MutationEntry<OpenclMutation> kOpenclMutations[] = {
    {OpenclMutation::tile_edge_dropped, "opencl_tile_edge_dropped",
     "opencl: moe_gemm leaves the last partial tile of output columns uncomputed"},
    {OpenclMutation::missing_barrier, "opencl_missing_barrier",
     "opencl: moe_gemm's k-loop has no barrier: work-items multiply tiles the others have not loaded yet"},
    {OpenclMutation::tile_row_skipped, "opencl_tile_row_skipped",
     "opencl: moe_gemm never loads the last row of its weight tile (reads an incomplete tile)"},
    {OpenclMutation::wrong_offset, "opencl_wrong_offset",
     "opencl: the second used expert's first GEMM reads its rows at the first expert's offset"},
};

}  // namespace

std::vector<Mutant> opencl_mutants(const std::string& device) {
    return mutants_from_table<OpenclMutation>(kOpenclMutations, "opencl", [device](OpenclMutation m) -> std::unique_ptr<Backend> {
        return std::make_unique<OpenclBackend>(OpenclOptions{device, m});
    });
}

struct OpenclBackend::State {
    OpenclOptions options;
    Selected selected;       // declared first: the buffers below are released before the context
    std::mutex mutex;        // one build, one run at a time (the workspace is shared)
    // What prepare() uploaded, and for which problem (its address and its weights' storage).
    const Problem* prepared_for = nullptr;
    std::vector<const unsigned char*> prepared_sources;
    std::optional<ocl::DeviceWeights> prepared;
    ocl::Workspace workspace;                     // device buffers reused from run to run
    std::map<std::string, double> kernel_times;  // of the last run

    // The programs a problem needs, built once (the f32 one with the autotuned GEMM sizes on a
    // GPU; the compressed-weight GEMMs for compressed weights; the f64 one for f64 data).
    void build(const Problem& p) {
        ocl::Runtime& rt = *selected.runtime;
        rt.build(mutation_defines(options.mutation));
        // One compressed-weight GEMM program per kind of compressed weight (types compiled in),
        // each built once: a later problem of the same kinds, or its runs, find them built.
        if (has_compressed_weights(p))
            for (const ocl::CompressedTypes& t : ocl::compressed_types(p)) rt.build_compressed(t);
        if (p.input(kHiddenStates).dtype() == DType::f64 && !rt.build_f64())
            throw std::runtime_error("opencl: f64 data on a device without cl_khr_fp64");
    }
};

OpenclBackend::OpenclBackend(OpenclOptions options) : state_(std::make_unique<State>()) {
    state_->options = std::move(options);
    state_->selected = select(state_->options.device);
}

OpenclBackend::~OpenclBackend() = default;

std::string OpenclBackend::name() const {
    return mutant_or_plain_name(kOpenclMutations, state_->options.mutation, "opencl");
}

std::string OpenclBackend::description() const {
    if (!state_->selected.runtime) return kStagesText;  // availability() says why
    const auto& rt = *state_->selected.runtime;
    const auto& d = rt.device();
    std::string s = std::string(kStagesText) + " on " + d.name + " (" + d.platform_name + ", driver " + d.driver_version + ")";
    if (rt.built()) {  // after the first prepare() or run(): the GEMM sizes, and what the autotune measured
        s += "; GEMM " + rt.gemm().describe();
        if (const auto tune = ocl::tune_report(d); !tune.empty()) s += "; autotune on a 4096x4096x2048 GEMM: " + tune;
        s += "; built: " + rt.build_report();
    }
    return s;
}

Availability OpenclBackend::availability() const {
    if (state_->selected.runtime) return {};
    return {false, state_->selected.reason};
}

Support OpenclBackend::supports(const Problem& p) const {
    const DType data = p.has(kHiddenStates) ? p.input(kHiddenStates).dtype() : DType::f32;
    if (data == DType::f64 && has_compressed_weights(p))
        return {false, "f64 data with compressed weights is not supported by the opencl backend"};
    if (data == DType::f64) {
        if (state_->selected.runtime && !state_->selected.runtime->device().fp64)
            return {false, "f64 data needs cl_khr_fp64, which " + state_->selected.runtime->device().name + " lacks"};
        return {};
    }
    for (const auto& [name, t] : p.inputs)
        if (t.dtype() == DType::f64)
            return {false, "f64 " + name + " with " + std::string(dtype_name(data)) + " data is not supported by the opencl backend"};
    return {};
}

// f64 data runs the f64 program (f64 arithmetic and intermediates); f32, f16 and bf16 data the
// f32 one (f16 and bf16 are storage: widened where read, f32 math, rounded when the output is
// stored).
Precision OpenclBackend::precision(DType data_type) const {
    if (data_type == DType::f64) return {DType::f64, DType::f64};
    return {DType::f32, DType::f32};
}

void OpenclBackend::prepare(const Problem& p) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->prepared_for = nullptr;
    state_->prepared.reset();
    if (!state_->selected.runtime || !supports(p).supported) return;  // run() reports why
    try {
        validate(p);
        state_->build(p);  // the autotune, on a GPU's first problem
        state_->prepared = ocl::upload_weights(*state_->selected.runtime, p);
    } catch (const std::exception&) {
        return;  // an invalid problem, or no room on the device: run() uploads (and reports) as it goes
    }
    state_->prepared_for = &p;
    state_->prepared_sources = weight_sources(p);
}

Output OpenclBackend::run(const Problem& p, bool want_stages) {
    if (!state_->selected.runtime) throw std::runtime_error("opencl backend unavailable: " + state_->selected.reason);
    const Support s = supports(p);
    if (!s.supported) throw std::runtime_error(s.reason);
    std::lock_guard<std::mutex> lock(state_->mutex);
    ocl::Runtime& rt = *state_->selected.runtime;
    state_->build(p);
    ocl::PipelineOptions o;
    if (state_->prepared && state_->prepared_for == &p && state_->prepared_sources == weight_sources(p))
        o.weights = &*state_->prepared;
    o.wrong_offset = state_->options.mutation == OpenclMutation::wrong_offset;
    o.fuse = state_->options.fuse && fuse_from_environment();
    rt.take_kernel_times();  // drop anything not from this run
    Output out = ocl::run_pipeline(rt, state_->workspace, p, want_stages, o);
    state_->kernel_times = rt.take_kernel_times();
    return out;
}

std::map<std::string, double> OpenclBackend::last_kernel_times() const { return state_->kernel_times; }

std::vector<std::string> opencl_device_list() {
    std::vector<std::string> lines;
    try {
        const ocl::Devices devices = ocl::enumerate_devices();
        if (devices.list.empty()) return {"none: " + devices.error};
        for (const auto& d : devices.list) lines.push_back(ocl::describe(d));
    } catch (const ocl::ClError& e) {
        lines.push_back(std::string("none: ") + e.what());
    }
    return lines;
}

std::string opencl_device_problem(const std::string& spec) {
    try {
        const ocl::Devices devices = ocl::enumerate_devices();
        if (devices.list.empty()) return "";
        std::string why;
        return ocl::select_device(devices, spec, why) ? "" : why;
    } catch (const ocl::ClError&) {
        return "";  // no usable platform: the backend reports it as unavailable
    }
}

RoutingPlan opencl_mask_gen(const Tensor& indices, std::size_t experts, const std::string& device) {
    Selected s = select(device);
    if (!s.runtime) throw std::runtime_error("opencl backend unavailable: " + s.reason);
    s.runtime->build();
    return ocl::mask_gen(*s.runtime, indices, experts);
}

namespace opencl_testing {

namespace {
// One built runtime per device spec, kept for the process (a build costs a few hundred ms).
const ocl::Runtime& runtime(const std::string& device) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<ocl::Runtime>> runtimes;
    std::lock_guard<std::mutex> lock(mutex);
    auto& rt = runtimes[device];
    if (!rt) {
        Selected s = select(device);
        if (!s.runtime) throw std::runtime_error("opencl backend unavailable: " + s.reason);
        s.runtime->build();
        rt = std::move(s.runtime);
    }
    return *rt;
}
}  // namespace

std::vector<float> gather(const Tensor& x, const std::vector<std::uint32_t>& token, const std::string& device) {
    return ocl::gather_rows(runtime(device), x, token);
}

std::vector<float> gemm(const std::vector<float>& A, std::size_t M, const Tensor& weights, bool kn, std::size_t expert,
                        const Tensor* bias, const std::string& device) {
    std::vector<std::size_t> counts(weights.shape()[0], 0);
    counts.at(expert) = M;
    return ocl::gemm_expert_rows(runtime(device), A, counts, weights, kn, bias);
}

std::vector<float> gemm_experts(const std::vector<float>& A, const std::vector<std::size_t>& counts,
                                const Tensor& weights, bool kn, const Tensor* bias, const std::string& device) {
    return ocl::gemm_expert_rows(runtime(device), A, counts, weights, kn, bias);
}

std::vector<float> swiglu(const std::vector<float>& first, const std::vector<float>& up, std::size_t rows,
                          std::size_t inter, bool gemm2, float beta, float limit, int gate_lane, const std::string& device) {
    return ocl::swiglu_rows(runtime(device), first, up, rows, inter, gemm2, beta, limit, gate_lane);
}

std::vector<float> scatter_reduce(const std::vector<float>& down, const std::vector<float>& slot_weight,
                                  const std::vector<std::uint32_t>& position, std::size_t tokens, std::size_t topk,
                                  std::size_t hidden, const std::string& device) {
    return ocl::scatter_reduce_rows(runtime(device), down, slot_weight, position, tokens, topk, hidden);
}

}  // namespace opencl_testing

std::string opencl_environment_problem() {
    try {
        ocl::staging_plan();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    if (std::string dir = ocl::kernel_dir_problem(); !dir.empty()) return dir;
    if (std::string dump = ocl::dump_dir_problem(); !dump.empty()) return dump;
    if (const auto g = ocl::environment_setting("MOE_OPENCL_GEMM"); g && *g != "wide" && *g != "compact")
        return "MOE_OPENCL_GEMM: '" + *g + "' is neither wide nor compact";
    if (std::string steps = ocl::rows_steps_problem(); !steps.empty()) return steps;
    if (const auto f = ocl::environment_setting("MOE_OPENCL_FUSE"); f && *f != "0" && *f != "1")
        return "MOE_OPENCL_FUSE: '" + *f + "' is neither 0 (every stage a kernel of its own) nor 1 (decode's "
               "launches fused, the default)";
    return "";
}

}  // namespace moe::backends
