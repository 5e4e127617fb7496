#pragma once
// `opencl`: the routed pipeline of OpenVINO's GPU plugin as OpenCL kernels (backends/opencl/src/kernels):
// mask_gen -> gather -> first GEMM(s) -> SwiGLU -> down GEMM (+ bias) -> scatter-reduce, f32
// arithmetic and f32 intermediates on the device for f32/f16/bf16 data (weights read in their
// own type, the output stored in the data type on the device), f64 arithmetic and intermediates
// for f64 data on devices with cl_khr_fp64. Runs on any OpenCL 1.2+ device behind the ICD loader
// (PoCL on a CPU-only machine); on a GPU the GEMM kernels take GPU bodies whose tile sizes a
// short autotune picks once per device and driver. A run uploads its inputs once, reads its
// output once, and reuses its device buffers.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends {

// The deliberately broken variants `moe-conform selftest` must catch. Kernel mutations are
// compiled in with -D flags (kernels/gemm.cl), host ones change an offset; the correct backend
// builds neither.
enum class OpenclMutation {
    none,
    tile_edge_dropped,  // moe_gemm leaves the last partial tile of output columns uncomputed
    // moe_gemm's k-loop without its barrier: a work-item multiplies tiles that the others have
    // not loaded yet. Caught deterministically on PoCL's CPU device too: PoCL runs the
    // work-items one after another between barriers and adds barriers of its own only at loop
    // boundaries, and the double-buffered k-step body (load step s + 1, compute step s) has
    // no inner loop left after unrolling, so none covers the missing one.
    missing_barrier,
    tile_row_skipped,   // moe_gemm: the last row of the weight tile is never loaded (tile used incomplete)
    wrong_offset,       // the second used expert's first GEMM reads its rows at the first expert's offset
};

// The opencl mutants (every OpenclMutation but none).
std::vector<Mutant> opencl_mutants(const std::string& device = "");  // on that device (OpenclOptions::device)

struct OpenclOptions {
    // "" = the first GPU, else the first device of any type; "P:D" = platform P, device D;
    // otherwise a case-insensitive substring of the device or platform name.
    std::string device;
    OpenclMutation mutation = OpenclMutation::none;
    // Decode's fused launches (SwiGLU stored by the first GEMM; on a GPU mask_gen and the gather in
    // one launch); false, or MOE_OPENCL_FUSE=0 in the environment, runs every stage as a kernel of
    // its own.
    bool fuse = true;
};

class OpenclBackend : public Backend {
public:
    explicit OpenclBackend(OpenclOptions options = {});
    ~OpenclBackend() override;
    std::string name() const override;  // opencl, or mutant:<mutation name>
    std::string description() const override;
    Availability availability() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    // Uploads the weights and biases to the device once; run() on the same, unchanged problem
    // object reuses them (any other problem is uploaded as it runs).
    void prepare(const Problem& p) override;
    Output run(const Problem& p, bool want_stages) override;
    // Device time of the last run() per kernel name (moe_gemm, moe_gather, ...), in seconds,
    // summed over its launches, from the queue's profiling events.
    std::map<std::string, double> last_kernel_times() const override;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// One line per OpenCL device found (platform:device index, name, platform, version, type,
// compute units, max work-group size, local memory, fp16/fp64), or one line saying why none.
std::vector<std::string> opencl_device_list();

// Why OpenclOptions::device `spec` picks no device where devices exist (the devices found
// named), or "" when it picks one, or when there is no OpenCL platform at all (the backend is
// then unavailable and its cases SKIP, as on any machine without a driver).
std::string opencl_device_problem(const std::string& spec);

// What is wrong with the opencl backend's environment variables, "" when nothing:
// MOE_OPENCL_STAGING (THREADSxKIB), MOE_OPENCL_GEMM (wide or compact) and MOE_OPENCL_KERNEL_DIR
// (a folder) when set. A malformed
// value makes the backend unavailable (its cases SKIP, naming it); tools refuse it up front.
std::string opencl_environment_problem();

// Testing hook: runs only the moe_mask_gen kernel on the selected device and returns what it
// produced, in make_routing_plan's form. Throws (with the reason) when no device is available.
RoutingPlan opencl_mask_gen(const Tensor& indices, std::size_t experts, const std::string& device = "");

}  // namespace moe::backends
