#pragma once
// The double-precision reference of the MOE operation (spec/README.md).
//   dense:  the op's formula literally: tile the tokens over all E experts, run every expert on
//           every token, multiply by the dense routing weights, reduce-sum over the expert axis.
//   sparse: only the K selected experts of each token, grouped by expert.
// Both add a token's expert terms in ascending expert order starting from +0, so for finite data
// they give the same bits (the dense mode only adds exact zeros). Every input type is widened
// exactly to f64; results do not depend on the thread count.
#include <map>
#include <string>
#include <string_view>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::reference {

enum class Mode { dense, sparse };
std::string_view mode_name(Mode m);

struct Options {
    Mode mode = Mode::sparse;
    bool stages = false;  // also return the intermediates, laid out [T, K, features]
    int threads = 1;
    // Sparse mode only (run() refuses it in dense mode): the stages whose bit is set (bit i:
    // stage_names()[i]) are rounded to `storage`, to nearest, ties to even, before the next step
    // reads them, as a backend that declares that storage type keeps them. The readings of a
    // storage-rounding case (storage_rounding.hpp); 0, the op itself.
    unsigned rounded_stages = 0;
    DType storage = DType::f64;
};

struct Result {
    Tensor output;                         // f64, the shape of hidden_states
    std::map<std::string, Tensor> stages;  // GEMM2: gate_up, act, down; GEMM3: gate, up, act, down
};

// Validates the problem (throws InputError), then computes it.
Result run(const Problem& problem, const Options& options = {});

// Stage names of an expert type, in pipeline order.
std::vector<std::string> stage_names(ExpertType t);

}  // namespace moe::reference
