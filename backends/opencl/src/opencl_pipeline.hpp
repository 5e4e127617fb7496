#pragma once
// The routed pipeline's host side: one packed upload, the kernel launches in order, one read of
// the output in its own type.
#include <cstdint>
#include <vector>

#include "cl_runtime.hpp"
#include "device_weights.hpp"
#include "moe/spec/backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends::ocl {

// The device buffers of a run and the pinned host memory its inputs are packed in, kept between
// runs (grown when a run needs more, never shrunk), so a run allocates nothing.
struct Workspace {
    Pinned staging;  // host side of `in`
    Buffer in;       // indices, routing weights, GEMM tile table and (when small) hidden states
    Buffer x;        // hidden states too large to pack (written from the tensor as it is)
    Buffer counts, offsets, token, slot, position, used, used_count;  // mask_gen's plan
    Buffer gathered, first, up, act, down, out;
};

// Hidden states up to this size travel in the packed upload (decode: one transfer in); larger
// ones are staged on their own (host_transfer.hpp), the host copies spread over threads.
constexpr std::size_t kPackedHiddenBytes = std::size_t(1) << 20;

struct PipelineOptions {
    const DeviceWeights* weights = nullptr;  // uploaded by prepare() (which validated p); null: upload now
    bool wrong_offset = false;               // mutant: the second used expert's first GEMM reads the first's rows
    // Decode's fused launches: SwiGLU stored by the first GEMM's rows kernels (when every tile of
    // it is an NK rows tile), and with the GPU bodies mask_gen and the gather in one launch
    // (moe_mask_gen_gather, when pairs * hidden <= kFusedGatherElems); false runs each stage as a
    // kernel of its own (MOE_OPENCL_FUSE=0, the A/B).
    bool fuse = true;
};

// Decode gathers at most this many elements in mask_gen's one work-group (moe_mask_gen_gather):
// T = 1 of GPT-OSS-20B (4 x 2880) and Qwen3-30B-A3B (8 x 2048) fit.
constexpr std::size_t kFusedGatherElems = 32768;

// The whole op on a validated problem whose floating inputs are f32, f16 or bf16 (the f32
// program), or whose data is f64 (the f64 program, built beforehand).
Output run_pipeline(const Runtime& rt, Workspace& ws, const Problem& p, bool want_stages,
                    const PipelineOptions& options = {});

// moe_mask_gen alone on the indices, read back in make_routing_plan's form (the testing hook).
RoutingPlan mask_gen(const Runtime& rt, const Tensor& indices, std::size_t experts);

// Single kernels on host data, for the per-kernel tests (moe/backends/opencl_testing.hpp).
std::vector<float> gather_rows(const Runtime& rt, const Tensor& x, const std::vector<std::uint32_t>& token);
std::vector<float> gemm_expert_rows(const Runtime& rt, const std::vector<float>& A,
                                    const std::vector<std::size_t>& counts, const Tensor& weights, bool kn,
                                    const Tensor* bias);
std::vector<float> swiglu_rows(const Runtime& rt, const std::vector<float>& first, const std::vector<float>& up,
                               std::size_t rows, std::size_t inter, bool gemm2, float beta, float limit, int gate_lane);
std::vector<float> scatter_reduce_rows(const Runtime& rt, const std::vector<float>& down,
                                       const std::vector<float>& slot_weight, const std::vector<std::uint32_t>& position,
                                       std::size_t tokens, std::size_t topk, std::size_t hidden);

}  // namespace moe::backends::ocl
