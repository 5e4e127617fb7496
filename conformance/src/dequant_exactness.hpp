#pragma once
// Whether a backend's dequantisation type D holds a compressed weight's values exactly
// (spec/tolerance.md, "Compressed weights"): then rounding W_f = (W - Z) S to D changes nothing,
// whatever path a correct kernel takes there, and the tolerance adds no dequantisation term.
#include <string>

#include "moe/spec/problem.hpp"

namespace moe::conformance {

// True when every value (c - Z) S that `weight`'s codes c can take with each of its group's scale
// and zero point is a value of `d` (NaN included: it stays NaN). A superset of the values the
// weight holds, so a `true` is safe. `weight` must be compressed in a validated problem.
bool dequant_type_holds_weight(const Problem& p, const std::string& weight, DType d);

}  // namespace moe::conformance
