#pragma once
// A backend reads its inputs and writes only its outputs. One that writes into its inputs (an
// in-place kernel, a plugin casting away const, a Python function scaling its argument in place)
// computes from values the reference never saw, and gets every backend after it in the same run
// blamed for its damage. So the runner fingerprints the inputs before a backend runs and checks
// them after.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::conformance {

// One 64-bit fingerprint per input tensor (of its bytes, shape and type), in input-name order.
using InputDigest = std::vector<std::pair<std::string, std::uint64_t>>;

InputDigest digest_inputs(const Problem& p);

// The inputs whose fingerprint differs from `before` (or that appeared or vanished).
std::vector<std::string> changed_inputs(const Problem& p, const InputDigest& before);

}  // namespace moe::conformance
