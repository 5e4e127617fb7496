#pragma once
// `opencl`: the routed pipeline of seed 001 as OpenCL kernels (backends/src/opencl/kernels):
// mask_gen -> gather -> first GEMM(s) -> SwiGLU -> down GEMM (+ bias) -> scatter-reduce, f32
// arithmetic and f32 intermediates on the device for f32/f16/bf16 inputs (weights read in their
// own type). f64 inputs are declared unsupported. Runs on any OpenCL 1.2+ device behind the ICD
// loader (PoCL on a CPU-only machine).
#include <memory>
#include <string>
#include <vector>

#include "moe/backends/backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends {

struct OpenclOptions {
    // "" = the first GPU, else the first device of any type; "P:D" = platform P, device D;
    // otherwise a case-insensitive substring of the device or platform name.
    std::string device;
};

class OpenclBackend : public Backend {
public:
    explicit OpenclBackend(OpenclOptions options = {});
    ~OpenclBackend() override;
    std::string name() const override { return "opencl"; }
    std::string description() const override;
    Availability availability() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// One line per OpenCL device found (platform:device index, name, platform, version, type,
// compute units, max work-group size, local memory, fp16/fp64), or one line saying why none.
std::vector<std::string> opencl_device_list();

// Testing hook: runs only the moe_mask_gen kernel on the selected device and returns what it
// produced, in make_routing_plan's form. Throws (with the reason) when no device is available.
RoutingPlan opencl_mask_gen(const Tensor& indices, std::size_t experts, const std::string& device = "");

}  // namespace moe::backends
