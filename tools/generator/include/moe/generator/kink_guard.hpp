#pragma once
// Keeps GEMM2 pre-activations off the clamp and minimum edges (x = +-clamp_limit). A value within
// rounding distance of an edge could take the other branch in a correct low-precision backend;
// such tokens are drawn again.
#include <cstddef>

#include "moe/generator/case_spec.hpp"
#include "moe/spec/problem.hpp"

namespace moe::generator {

struct KinkReport {
    std::size_t redraws = 0;     // token rows drawn again
    std::size_t near_lanes = 0;  // (token, slot, lane) values still near an edge when attempts ran out
};

// The margin around an edge at x = +-L: the rounding of a pre-activation to the case type
// (kKinkRoundingUnits * u_case * L, a backend may store gate_up in that type) plus a probabilistic
// bound on f32 accumulation (kKinkAccumulationLambda * sqrt(H) * 2^-24 * (|W0||x| + |b0|)).
inline constexpr double kKinkRoundingUnits = 2.0;
inline constexpr double kKinkAccumulationLambda = 8.0;

KinkReport keep_off_kinks(Problem& p, const CaseSpec& c, int threads, int max_attempts = 8);

}  // namespace moe::generator
