#pragma once
// A validated Problem as the C ABI sees it (version 2; a version-1 plugin gets its prefix): views
// of its tensors (no copies), its attributes, given and resolved, and its compressed weights. The
// view borrows from the problem, which must outlive it.
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe_conform/backend_abi.h"

namespace moe::backends::plugin {

int32_t abi_dtype(DType t);       // every DType has a code (the compressed ones: version 2 only)
DType dtype_from_abi(int32_t t);  // throws InputError for an unknown value

class ProblemView {
public:
    // Validates p (throws InputError); with `values_checked` (p is the problem prepare() saw,
    // its inputs unchanged) only its structure: validate_structure().
    explicit ProblemView(const Problem& p, bool values_checked = false);
    const moe_problem_v2* get() const { return &view_; }
    const Dims& dims() const { return dims_; }

private:
    Dims dims_;
    std::vector<moe_tensor_view_v1> inputs_;
    std::vector<moe_compressed_weight_v2> compressed_;
    moe_problem_v2 view_{};
};

}  // namespace moe::backends::plugin
