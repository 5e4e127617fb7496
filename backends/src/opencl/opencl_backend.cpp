#include "moe/backends/opencl_backend.hpp"

#include <mutex>
#include <optional>

#include "cl_device.hpp"
#include "cl_runtime.hpp"
#include "opencl_pipeline.hpp"

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
        s.runtime = std::make_unique<ocl::Runtime>(*d);
    } catch (const ocl::ClError& e) {
        s.reason = e.what();
    }
    return s;
}

}  // namespace

struct OpenclBackend::State {
    OpenclOptions options;
    Selected selected;
    std::mutex build_mutex;  // the program is built on first use (a few hundred ms on PoCL)
};

OpenclBackend::OpenclBackend(OpenclOptions options) : state_(std::make_unique<State>()) {
    state_->options = std::move(options);
    state_->selected = select(state_->options.device);
}

OpenclBackend::~OpenclBackend() = default;

std::string OpenclBackend::description() const {
    if (!state_->selected.runtime) return std::string(kStagesText) + "; no device";
    const auto& d = state_->selected.runtime->device();
    return std::string(kStagesText) + " on " + d.name + " (" + d.platform_name + ")";
}

Availability OpenclBackend::availability() const {
    if (state_->selected.runtime) return {};
    return {false, state_->selected.reason};
}

Support OpenclBackend::supports(const Problem& p) const {
    for (const auto& [name, t] : p.inputs)
        if (t.dtype() == DType::f64) return {false, "f64 inputs are not supported by the opencl backend"};
    return {};
}

Precision OpenclBackend::precision(DType) const { return {DType::f32, DType::f32}; }

Output OpenclBackend::run(const Problem& p, bool want_stages) {
    if (!state_->selected.runtime) throw std::runtime_error("opencl backend unavailable: " + state_->selected.reason);
    const Support s = supports(p);
    if (!s.supported) throw std::runtime_error(s.reason);
    {
        std::lock_guard<std::mutex> lock(state_->build_mutex);
        state_->selected.runtime->build();
    }
    return ocl::run_pipeline(*state_->selected.runtime, p, want_stages);
}

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

RoutingPlan opencl_mask_gen(const Tensor& indices, std::size_t experts, const std::string& device) {
    Selected s = select(device);
    if (!s.runtime) throw std::runtime_error("opencl backend unavailable: " + s.reason);
    s.runtime->build();
    return ocl::mask_gen(*s.runtime, indices, experts).host;
}

}  // namespace moe::backends
