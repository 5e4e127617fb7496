#pragma once
// The routed pipeline's host side: uploads, the kernel launches in order, read-back.
#include <cstdint>
#include <vector>

#include "cl_runtime.hpp"
#include "moe/spec/backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends::ocl {

// Runs moe_mask_gen on the indices and returns its outputs: on the device (for the next
// kernels) and read back in make_routing_plan's form.
struct DevicePlan {
    Buffer token, slot, position;
    RoutingPlan host;
};
DevicePlan mask_gen(const Runtime& rt, const Tensor& indices, std::size_t experts);

// A tensor on the device, read in its own element type (code of kernels/common.cl). A weight
// tensor is in `buf` as [E, K, N] (KN, what the tiled kernels read); an NK weight tensor is also
// kept as given, [E, N, K], in `nk` (what moe_gemm_rows_*_nk streams), so NK weights take twice
// their size in device memory. KN weights and biases have `buf` only.
struct Weights {
    Buffer buf;
    std::int32_t type = 0;
    Buffer nk;             // the NK original when has_nk
    bool has_nk = false;
};
// The problem's weights and biases on the device (prepare() keeps them between runs). Absent
// tensors are 1-byte placeholders.
struct DeviceWeights {
    Weights w0, w1, w2, b0, b1;
    bool has_b0 = false, has_b1 = false;
};
DeviceWeights upload_weights(const Runtime& rt, const Problem& p);

struct PipelineOptions {
    const DeviceWeights* weights = nullptr;  // uploaded by prepare(); null: upload now
    bool wrong_offset = false;               // mutant: the second used expert's first GEMM reads the first's rows
};

// The whole op on a validated problem whose floating inputs are f32, f16 or bf16.
Output run_pipeline(const Runtime& rt, const Problem& p, bool want_stages, const PipelineOptions& options = {});

// Single kernels on host data, for the per-kernel tests (moe/backends/opencl_testing.hpp).
std::vector<float> gather_rows(const Runtime& rt, const Tensor& x, const std::vector<std::uint32_t>& token);
std::vector<float> gemm_rows(const Runtime& rt, const std::vector<float>& A, std::size_t M, const Tensor& weights,
                             bool kn, std::size_t expert, const Tensor* bias);
std::vector<float> gemm_expert_rows(const Runtime& rt, const std::vector<float>& A,
                                    const std::vector<std::size_t>& counts, const Tensor& weights, bool kn,
                                    const Tensor* bias);
std::vector<float> swiglu_rows(const Runtime& rt, const std::vector<float>& first, const std::vector<float>& up,
                               std::size_t rows, std::size_t inter, bool gemm2, float beta, float limit, int gate_lane);
std::vector<float> scatter_reduce_rows(const Runtime& rt, const std::vector<float>& down,
                                       const std::vector<float>& slot_weight, const std::vector<std::uint32_t>& position,
                                       std::size_t tokens, std::size_t topk, std::size_t hidden);

}  // namespace moe::backends::ocl
