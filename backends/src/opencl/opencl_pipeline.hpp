#pragma once
// The routed pipeline's host side: uploads, the kernel launches in order, read-back.
#include "cl_runtime.hpp"
#include "moe/backends/backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends::ocl {

// Runs moe_mask_gen on the indices and returns its outputs: on the device (for the next
// kernels) and read back in make_routing_plan's form.
struct DevicePlan {
    Buffer token, slot, position;
    RoutingPlan host;
};
DevicePlan mask_gen(const Runtime& rt, const Tensor& indices, std::size_t experts);

// The whole op on a validated problem whose floating inputs are f32, f16 or bf16.
Output run_pipeline(const Runtime& rt, const Problem& p, bool want_stages);

}  // namespace moe::backends::ocl
