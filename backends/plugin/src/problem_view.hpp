#pragma once
// A validated Problem as the C ABI sees it: views of its tensors (no copies) and its attributes,
// given and resolved. The view borrows from the problem, which must outlive it.
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe_conform/backend_abi.h"

namespace moe::backends::plugin {

int32_t abi_dtype(DType t);
DType dtype_from_abi(int32_t t);  // throws InputError for an unknown value

class ProblemView {
public:
    explicit ProblemView(const Problem& p);  // validates p (throws InputError)
    const moe_problem_v1* get() const { return &view_; }
    const Dims& dims() const { return dims_; }

private:
    Dims dims_;
    std::vector<moe_tensor_view_v1> inputs_;
    moe_problem_v1 view_{};
};

}  // namespace moe::backends::plugin
