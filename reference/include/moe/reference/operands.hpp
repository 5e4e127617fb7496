#pragma once
// The op's inputs widened to f64 in the shapes the computation wants. Shared by both modes.
#include <cstddef>
#include <vector>

#include "moe/reference/gemm.hpp"
#include "moe/spec/problem.hpp"

namespace moe::reference {

// hidden_states as T rows of H.
PaddedMatrix hidden_rows(const Problem& p, const Dims& d);

// Expert e of weight input `name` as N rows of K (the layout [E, N, K] read directly, [E, K, N]
// transposed); a compressed weight dequantised exactly, (W - Z) * S (spec/compressed.md).
PaddedMatrix weight_rows(const Problem& p, const char* name, std::size_t e, WeightLayout layout);
// The same into `m`, whose storage is reused: a loop over experts keeps one matrix per weight.
void weight_rows_into(const Problem& p, const char* name, std::size_t e, WeightLayout layout, PaddedMatrix& m);

// Expert e of an optional bias ([E, 1, N] or [E, N]) as N values; zeros when the input is absent.
std::vector<double> bias_row(const Problem& p, const char* name, std::size_t e, std::size_t n);

// Routing weights as a dense [E, T] table, whichever layout the problem uses.
std::vector<double> dense_routing(const Problem& p, const Dims& d, RoutingLayout layout);

// One (token, top-k slot) pair routed to an expert.
struct RoutedPair {
    std::size_t token, slot;
};
// Per expert, its pairs in ascending token order.
std::vector<std::vector<RoutedPair>> pairs_by_expert(const Problem& p, const Dims& d);

// The hidden rows of `pairs`' tokens, one row per pair, in pair order.
PaddedMatrix gather_rows(const PaddedMatrix& x, const std::vector<RoutedPair>& pairs);

}  // namespace moe::reference
