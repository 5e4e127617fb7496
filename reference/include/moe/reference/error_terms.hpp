#pragma once
// First-order rounding-error analysis of the operation (spec/tolerance.md). For every element of
// every stage, and of the output, the magnitudes that each source of rounding error multiplies:
//   first_acc    accumulating the first GEMM(s) (length H) and adding bias_0
//   first_store  storing gate_up (or gate, up) in the intermediate type
//   act_eval     evaluating the activation (exp, divide, multiplies)
//   act_store    storing the activation in the intermediate type
//   down_acc     accumulating the down GEMM (length I) and adding bias_1
//   down_store   storing the down output in the intermediate type; at the output the same tensor,
//                sum_k |w_k| |y_k|, also carries the top-k reduction's accumulation error
// Each term propagates through the later stages by the magnitudes |W| and the activation's
// Lipschitz bounds, so a branch flip at a clamp or minimum edge stays covered. A backend's bound
// is sum over terms of coefficient(term) * tensor(term); the coefficients come from its unit
// roundoffs (conformance/tolerance).
#include <map>
#include <string>
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::reference {

// max |d/dz swish(z; beta)| over all z and beta: max of s(w) + w s(w) (1 - s(w)) is 1.0998.
inline constexpr double kSwishSlopeBound = 1.1;
// Rounding errors of one activation evaluation, in units of the compute type's roundoff: exp
// (2), 1 + e and the division (2), the multiplies and the + 1 (3), rounded up. The exp
// argument's own rounding adds |beta * gate| more (it scales exp's relative error).
inline constexpr double kActivationEvalUnits = 8.0;

inline const std::vector<std::string>& error_term_names() {
    static const std::vector<std::string> names = {"first_acc", "first_store", "act_eval",
                                                   "act_store", "down_acc",    "down_store"};
    return names;
}

struct ErrorTerms {
    // Output terms, each f64 with the shape of hidden_states.
    std::map<std::string, Tensor> output;
    // Stage terms, "<stage>/<term>", each f64 [T, K, features] (with_stages only).
    std::map<std::string, Tensor> stages;
};

ErrorTerms error_terms(const Problem& p, bool with_stages, int threads);

}  // namespace moe::reference
