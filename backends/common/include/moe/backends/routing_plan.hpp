#pragma once
// What the GPU pipeline's mask_gen computes (OpenVINO's moe_mask_gen): from the top-k indices, per expert the
// (token, slot) pairs routed to it, grouped by expert in ascending expert id, in ascending token
// order inside each expert, with counts, offsets and the list of experts that receive a token.
// Shared by the routed backends (cpu; the OpenCL host code checks its kernel against it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::backends {

struct RoutingPlan {
    std::size_t experts = 0, tokens = 0, topk = 0;
    std::vector<std::size_t> counts;    // [E] pairs per expert
    std::vector<std::size_t> offsets;   // [E + 1] exclusive prefix sum of counts
    std::vector<std::uint32_t> token;   // [T * K] pair -> token, expert-major
    std::vector<std::uint32_t> slot;    // [T * K] pair -> top-k slot
    std::vector<std::size_t> position;  // [T * K] (token * K + slot) -> pair index
    std::vector<std::size_t> used;      // experts with at least one pair, ascending
};

// From the indices tensor ([T, K] or [B, S, K], i32 or i64; validated before).
RoutingPlan make_routing_plan(const Tensor& indices, std::size_t experts);

}  // namespace moe::backends
